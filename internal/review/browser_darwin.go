package review

// opener is the command that opens a URL in the default browser.
func opener() (string, bool) { return "open", true }

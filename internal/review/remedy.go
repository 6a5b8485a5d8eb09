package review

import "github.com/airlockdev/airlock"

// remedy is m in the page's terms: its buttons and its reload.
func remedy(m airlock.Remedy) string {
	switch m.Kind {
	case airlock.RemedyApprove, airlock.RemedyUserApprove:
		return "look at them, and press Approve & commit if they are wanted"
	case airlock.RemedyReviewAgain:
		return "reload the page, review it again and commit what you reviewed"
	case airlock.RemedyRebase:
		return "the user can run `airlock rebase " + m.Tx + "` (a command line step), then resolve what it marks and reload the page"
	case airlock.RemedyResolve:
		return "edit the conflict markers out of these files in " + m.Dir + ", then reload the page"
	case airlock.RemedyRecover:
		return "the user has to run `airlock recover --workdir " + m.Base + "` first (a command line step: no tool here does it)"
	}
	return ""
}

// explain is r's reason with its remedy in the page's terms.
func explain(r *airlock.Refusal) string {
	rem := remedy(r.Remedy)
	switch {
	case rem == "":
		return r.Reason
	case r.Reason == "":
		return rem
	}
	return r.Reason + "; " + rem
}

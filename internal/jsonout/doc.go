// Package jsonout holds the shapes of airlock's --json output, one Go type
// per object docs/json.md documents, and builds them from the core's typed
// values. The command line prints them; the MCP server's settle result is
// made from the same Settle, so the two cannot drift apart; and the test
// of docs/json.md reads these types' fields and tags against its tables.
//
// What these types guarantee is the output's bytes: their fields are in
// the order the members have always been printed (alphabetical, where the
// output was once a map), and a member that is present "only" sometimes is
// omitted by its tag exactly then. The core does not import this package:
// it returns data, and this package gives it its published form.
package jsonout

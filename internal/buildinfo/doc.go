// Package buildinfo says which airlock this is: the module version, the
// commit it was built from and whether that tree had uncommitted changes,
// and the Go toolchain, read from the binary's own build information. The
// CLI's `version` and the MCP server's implementation version both come
// from Get, so the two can never disagree.
package buildinfo

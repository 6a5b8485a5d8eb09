// Package history is what a base's history is made of: the chain of
// receipts committed to it, each naming the digest of the one before
// (Add files one, Walk follows and verifies them from the newest back),
// and the reversal of one commit's applied journal in a staged tree
// (Reverse), which undo commits as a transaction of its own.
//
// Walk never passes over a receipt it cannot read safely: a chain that
// cannot be trusted is an error, never a shorter chain. Reverse changes
// nothing unless every path still holds exactly what the commit left.
package history

package receipt

// How a landing into a remote was validated: the members validated and
// batch_tree, kept apart from the other optional members because they
// mean something only together with landed_commit and validators.
const (
	validatedMember = "validated"
	batchTreeMember = "batch_tree"
	// ValidatedAlone: the validators ran on the landed commit's own tree.
	ValidatedAlone = "alone"
	// ValidatedBatch: the validators ran once on the batch's tip tree
	// (batch_tree), which holds this commit's change and every earlier
	// commit's of the batch.
	ValidatedBatch = "batch"
)

// validatedMembers counts the validated and batch_tree members obj has.
func validatedMembers(obj map[string]any) int {
	n := 0
	for _, m := range []string{validatedMember, batchTreeMember} {
		if _, ok := obj[m]; ok {
			n++
		}
	}
	return n
}

// isValidatedMember reports whether k is one of them.
func isValidatedMember(k string) bool { return k == validatedMember || k == batchTreeMember }

// readValidated reads how a landing was validated: only in a landed
// receipt whose validators ran; batch_tree exactly when it was a batch.
func (c *checker) readValidated(r *Receipt, g groups) {
	_, hasTree := c.obj[batchTreeMember]
	if _, ok := c.obj[validatedMember]; !ok {
		if hasTree && c.err == nil {
			c.fail(batchTreeMember, "is there without %q: only a receipt validated as part of a batch names the batch's tree", validatedMember)
		}
		return
	}
	r.Validated = c.str(validatedMember)
	switch {
	case c.err != nil:
		return
	case r.Validated != ValidatedAlone && r.Validated != ValidatedBatch:
		c.fail(validatedMember, "is %q, not %q or %q", r.Validated, ValidatedAlone, ValidatedBatch)
	case !g.landed:
		c.fail(validatedMember, "is there, but the receipt names no landed commit: only a landing into a remote says how it was validated")
	case !g.validators:
		c.fail(validatedMember, "is %q, but the receipt names no validators that ran", r.Validated)
	case r.Validated == ValidatedAlone && hasTree:
		c.fail(batchTreeMember, "is there, but the landing was validated alone")
	case r.Validated == ValidatedBatch && !hasTree:
		c.fail(batchTreeMember, "is missing: a landing validated as part of a batch names the batch's tip tree")
	case r.Validated == ValidatedBatch:
		r.BatchTree = c.str(batchTreeMember)
		if c.err == nil && !isCommit(r.BatchTree) {
			c.fail(batchTreeMember, "is %q, not a git tree id", r.BatchTree)
		}
	}
}

package share

// TestHooks switch the share coordinator's rules off for the negative
// controls of tests outside this package (the broker's, and the
// integration tests' through the broker's seam): the same scenario with
// the rule removed, showing the failure it prevents. The zero value is
// production. They live in the unexported knobs (Options.private), set
// only through WithTestHooks.
type TestHooks struct {
	// NoLockExpiry turns acquisition lock expiry off: acquired records
	// stay with their member however long it holds them.
	NoLockExpiry bool
	// NoConnRelease keeps share sessions and their acquired records when
	// their connection closes (ConnClosed does nothing).
	NoConnRelease bool
	// NoStore stops storing share partition state: acknowledgements are
	// answered but not durable.
	NoStore bool
}

// WithTestHooks returns o with the test hooks h in its unexported knobs.
// It is the one seam through which code outside this package (the
// broker's knobs) reaches them; production code never calls it, and no
// config file, flag or API leads to it. The other knobs are set by this
// package's own tests.
func WithTestHooks(o Options, h TestHooks) Options {
	o.private.hooks = h
	return o
}

// knobs are the package's test seams, one unexported struct in the manner
// of pebble's Options.private (carried in Options.private, read by the
// Coordinator from c.opt): never set by a user; the zero value is what
// production runs.
type knobs struct {
	// hooks are the TestHooks above.
	hooks TestHooks
	// noStickyAssign makes the assignor ignore the current assignment:
	// the negative control of the stickiness tests (assign_test.go).
	noStickyAssign bool
}

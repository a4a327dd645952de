package psm

// NewManagerFromEntries returns a manager holding entries (as decoded by
// DecodeSnapshot) with offset as its map end offset: the state recovery
// would load from a snapshot, without reading or deleting any file. It is
// for tools (dump-log --deep replays a log from its oldest snapshot).
func NewManagerFromEntries(cfg Config, entries []Entry, offset int64) *Manager {
	m := NewManager(cfg, nil, nil)
	m.loadEntries(entries)
	m.mapEnd = offset
	return m
}

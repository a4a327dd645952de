package coordinator

// Groups is the group coordinator (work in progress: this placeholder lets
// the transaction coordinator compile against group_txn.go).
type Groups struct{}

func (g *Groups) stageTxnOffsets(string, int64, int16, map[TopicPartition]OffsetAndMetadata) error {
	return ErrCoordinatorNotAvailable
}
func (g *Groups) completeTxnOffsets(int64, bool) error { return ErrCoordinatorNotAvailable }
func (g *Groups) commitOffsetsAdmin(string, map[TopicPartition]OffsetAndMetadata) error {
	return ErrCoordinatorNotAvailable
}
func (g *Groups) groupIsActive(string) bool                                   { return false }
func (g *Groups) listGroupOffsets(string) map[TopicPartition]OffsetAndMetadata { return nil }

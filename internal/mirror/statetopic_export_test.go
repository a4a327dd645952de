package mirror

// A seam of the state topic for the tests of package mirror_test.

// StateDocument is the state document t holds, JSON as mirror-state.log
// and mirrors.json held it.
func StateDocument(t StateTopic) ([]byte, error) {
	_, d, err := loadTopicState(t)
	if err != nil {
		return nil, err
	}
	return encodeDoc(d)
}

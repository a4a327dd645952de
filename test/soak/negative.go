package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// cutNewestSegment is the negative control (-negative-control): with the
// broker down after the final SIGKILL it halves the newest segment of
// soak-idem-0, as a broker that lost acknowledged data would have. The
// verification must then report lost records and a group commit beyond the
// log end, and the run must fail.
func cutNewestSegment(dataDir string) (string, error) {
	segs, err := filepath.Glob(filepath.Join(dataDir, topicIdem+"-0", "*.log"))
	if err != nil || len(segs) == 0 {
		return "", fmt.Errorf("negative control: no segment of %s-0 (%v)", topicIdem, err)
	}
	sort.Strings(segs)
	newest := segs[len(segs)-1]
	fi, err := os.Stat(newest)
	if err != nil {
		return "", err
	}
	if err := os.Truncate(newest, fi.Size()/2); err != nil {
		return "", err
	}
	return fmt.Sprintf("negative control: cut %s from %d to %d bytes", newest, fi.Size(), fi.Size()/2), nil
}

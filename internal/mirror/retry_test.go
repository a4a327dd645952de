package mirror

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestRetryBackoff(t *testing.T) {
	s := &Settings{FailedRetryInitialBackoff: 50 * time.Millisecond, FailedRetryMaxBackoff: 400 * time.Millisecond}
	var got []time.Duration
	for streak := 1; streak <= 6; streak++ {
		got = append(got, retryBackoff(s, streak))
	}
	if want := "[50ms 100ms 200ms 400ms 400ms 400ms]"; fmt.Sprint(got) != want {
		t.Fatalf("backoffs %v, want %s", got, want)
	}
	s.FailedRetryInitialBackoff = time.Second // above the cap: the cap
	if d := retryBackoff(s, 1); d != 400*time.Millisecond {
		t.Fatalf("initial above max: %v", d)
	}
}

func TestRetriableFailures(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("source topic %q: %w", "t", kerr.TopicAuthorizationFailed), true},
		{kerr.ClusterAuthorizationFailed, true},
		{kerr.CorruptMessage, true},
		{&localAppendError{errors.New("disk")}, true},
		{errNoConvergence, true},
		{kerr.NotLeaderForPartition, false}, // retried in place, not FAILED
		{errors.New("dial tcp: refused"), false},
		{&identityError{msg: "another cluster"}, false},
		{&truncateRefusedError{msg: "would cut"}, false},
		{kerr.SaslAuthenticationFailed, false}, // until the source config changes
	} {
		if got := isRetriableFailure(tc.err); got != tc.want {
			t.Errorf("isRetriableFailure(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

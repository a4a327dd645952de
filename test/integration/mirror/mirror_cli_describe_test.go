package mirror

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"
)

// describeRow returns the text row of partition "topic p" from a describe
// table, split in columns (the note, last, may hold spaces).
func describeRow(t *testing.T, out, topic, p string) []string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 11 && f[0] == topic && f[1] == p {
			return f
		}
	}
	t.Fatalf("no row for %s-%s in:\n%s", topic, p, out)
	return nil
}

// TestMirrorCLIDescribeExplains: `mirror describe`'s
// text table has the records lost at failover and the fetch errors, and
// while a source transaction is open it says why the lag does not close.
// Before, the table had neither column and showed the lag with no note.
func TestMirrorCLIDescribeExplains(t *testing.T) {
	t.Parallel()
	a, _ := itest.OpenTxnFailoverSource(t) // LSO 16 held by an open transaction, HW 18; A is killed below
	b := itest.StartBinary(t, t.TempDir())
	admin := "--admin=" + b.HttpAddr
	must := func(args ...string) string {
		t.Helper()
		out, err := itest.RunCLI(t, append(args, admin)...)
		if err != nil {
			t.Fatalf("minibroker %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	must("mirror", "create", "from-a", "--source", a.Addr())
	must("mirror", "start", "from-a", "--topics", "ledger")

	var out string
	for deadline := time.Now().Add(itest.Timeout); ; time.Sleep(50 * time.Millisecond) {
		out = must("mirror", "describe", "from-a")
		if strings.Contains(out, "waiting for source LSO 16, open transaction since ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("describe never explained the lag:\n%s", out)
		}
	}
	if !strings.Contains(out, "LOST AT FAILOVER") || !strings.Contains(out, "FETCH ERRORS") {
		t.Fatalf("describe's table lacks the failover and error columns:\n%s", out)
	}
	if row := describeRow(t, out, "ledger", "0"); row[3] != "16" || row[4] != "18" || row[5] != "2" {
		t.Fatalf("while the source transaction is open: %v, want local end 16, source HW 18, lag 2", row)
	}

	// The source goes away: the fetch errors are counted in the table and
	// the note is the last error, not the open transaction any more.
	a.Kill()
	for deadline := time.Now().Add(itest.Timeout); ; time.Sleep(50 * time.Millisecond) {
		out = must("mirror", "describe", "from-a")
		row := describeRow(t, out, "ledger", "0")
		if row[10] != "0" && !strings.Contains(out, "waiting for source LSO") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("fetch errors never shown:\n%s", out)
		}
	}

	// Failover: the local LSO is 11 (the committed transaction's marker
	// is past the source's LSO), so 5 offsets are lost, and the table says so.
	out = must("mirror", "stop", "from-a", "--all-topics", "--wait")
	if row := describeRow(t, out, "ledger", "0"); row[2] != "STOPPED" || row[8] != "11" || row[9] != "5" {
		t.Fatalf("after the failover: %v, want STOPPED, barrier 11, 5 lost\n%s", row, out)
	}
	b.Stop(t, syscall.SIGTERM)
}

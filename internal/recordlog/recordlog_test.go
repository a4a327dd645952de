package recordlog

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/minibroker/minibroker/internal/vfs"
	"github.com/minibroker/minibroker/internal/vfs/errorfs"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var testFormat = Format{Magic: "MBRT", Version: 1, MaxRecord: 1 << 20}

func testOptions(fs vfs.FS) Options {
	return Options{FS: fs, Dir: "/data", Name: "test.log", Format: testFormat}
}

func memFS(t *testing.T) *errorfs.MemFS {
	t.Helper()
	fs := errorfs.NewMem()
	if err := fs.MkdirAll("/data", 0o755); err != nil {
		t.Fatal(err)
	}
	return fs
}

func body(i int) []byte { return fmt.Appendf(nil, "record-%03d", i) }

// open opens o and returns the bodies it read.
func open(t *testing.T, o Options) (*Writer, Recovered, [][]byte) {
	t.Helper()
	var got [][]byte
	w, rec, err := Open(o, func(_ int, b []byte) error {
		got = append(got, bytes.Clone(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return w, rec, got
}

// writeRecords appends and syncs bodies 0..n-1 one at a time.
func writeRecords(t *testing.T, o Options, n int) {
	t.Helper()
	w, _, _ := open(t, o)
	for i := range n {
		tk, err := w.Append(body(i))
		if err == nil {
			err = w.Wait(tk)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(false); err != nil {
		t.Fatal(err)
	}
}

// TestGolden pins the byte layout drawn in format.go.
func TestGolden(t *testing.T) {
	data := testFormat.AppendHeader(nil)
	data = AppendFrame(data, []byte{1, 'a', 'b', 'c'})
	data = AppendFrameFunc(data, func(b []byte) []byte { return append(b, 2, 0xff) })
	path := filepath.Join("testdata", "recordlog.golden.hex")
	if os.Getenv("MINIBROKER_UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(path, []byte(hex.Dump(data)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (regenerate with MINIBROKER_UPDATE_GOLDEN=1)", err)
	}
	if got := hex.Dump(data); got != string(want) {
		t.Fatalf("record log encoding changed:\n got:\n%s\nwant:\n%s", got, want)
	}
	var bodies []string
	end, damaged, err := testFormat.Scan(data, ScanOptions{}, func(_ int, b []byte) error {
		bodies = append(bodies, hex.EncodeToString(b))
		return nil
	})
	if err != nil || end != len(data) || damaged != nil || fmt.Sprint(bodies) != "[01616263 02ff]" {
		t.Fatalf("scan: end %d of %d, damaged %v, bodies %v, %v", end, len(data), damaged, bodies, err)
	}
}

// tornCase damages a log of 5 records ("record-000".."record-004", 18
// bytes a frame after the 8-byte header) and says how many records must
// survive.
type tornCase struct {
	name   string
	resync bool
	damage func(b []byte) []byte
	want   int // records read back
	lost   int // with resync: records in the damaged stretch
}

const frameLen = FrameHeaderLen + 10

func cut(n int) func([]byte) []byte { return func(b []byte) []byte { return b[:n] } }
func flip(at int) func([]byte) []byte {
	return func(b []byte) []byte { b[at] ^= 0x5a; return b }
}

var tornCases = []tornCase{
	{name: "intact", damage: func(b []byte) []byte { return b }, want: 5},
	{name: "cut in last length", damage: cut(HeaderLen + 4*frameLen + 2), want: 4},
	{name: "cut in last CRC", damage: cut(HeaderLen + 4*frameLen + 6), want: 4},
	{name: "cut in last body", damage: cut(HeaderLen + 4*frameLen + 12), want: 4},
	{name: "cut one byte short", damage: cut(HeaderLen + 5*frameLen - 1), want: 4},
	{name: "cut in third frame", damage: cut(HeaderLen + 2*frameLen + 9), want: 2},
	{name: "flip last length", damage: flip(HeaderLen + 4*frameLen + 3), want: 4},
	{name: "flip last CRC", damage: flip(HeaderLen + 4*frameLen + 5), want: 4},
	{name: "flip last body", damage: flip(HeaderLen + 4*frameLen + 15), want: 4},
	{name: "zeroed tail", damage: func(b []byte) []byte { return append(b, make([]byte, 64)...) }, want: 5},
	{name: "flip middle body", damage: flip(HeaderLen + 2*frameLen + 12), want: 2},
	{name: "flip middle body, resync", resync: true, damage: flip(HeaderLen + 2*frameLen + 12), want: 4, lost: 1},
	{name: "flip middle length, resync", resync: true, damage: flip(HeaderLen + 1*frameLen + 1), want: 4, lost: 1},
}

// runTorn runs one case and returns what went wrong ("" if nothing).
func runTorn(t *testing.T, tc tornCase, format Format, skipTruncate bool) string {
	fs := memFS(t)
	o := testOptions(fs)
	o.Format, o.Scan.Resync, o.private.skipTruncate = format, tc.resync, skipTruncate
	writeRecords(t, o, 5)
	path := filepath.Join("/data", "test.log")
	data, _ := vfs.ReadFile(fs, path)
	if err := vfs.WriteFileAtomic(fs, "/data", path, tc.damage(data)); err != nil {
		t.Fatal(err)
	}
	w, rec, got := open(t, o)
	if len(got) != tc.want || len(rec.Damaged) != min(tc.lost, 1) {
		w.Close(true)
		return fmt.Sprintf("read %d records (damaged %v), want %d", len(got), rec.Damaged, tc.want)
	}
	var want [][]byte
	for i := range 5 {
		want = append(want, body(i))
	}
	// The records read are the ones written, in order (minus a lost one).
	for i, j := 0, 0; i < len(got); i, j = i+1, j+1 {
		if tc.lost > 0 && !bytes.Equal(got[i], want[j]) {
			j++
		}
		if !bytes.Equal(got[i], want[j]) {
			w.Close(true)
			return fmt.Sprintf("record %d is %q, want %q", i, got[i], want[j])
		}
	}
	// What is appended after the cut is read back after it.
	tk, err := w.Append([]byte("after"))
	if err == nil {
		err = w.Wait(tk)
	}
	w.Close(false)
	if err != nil {
		t.Fatal(err)
	}
	_, _, again := open(t, o)
	if len(again) != tc.want+1 || string(again[len(again)-1]) != "after" {
		return fmt.Sprintf("after appending to the cut log: %d records, want %d ending in \"after\"", len(again), tc.want+1)
	}
	return ""
}

// TestTornWrite: write 5 records, damage the file, reopen: the log ends
// exactly before the first damaged frame (or, with resync, skips only it),
// and an append after the reopen is read back after the cut.
func TestTornWrite(t *testing.T) {
	for _, tc := range tornCases {
		t.Run(tc.name, func(t *testing.T) {
			if msg := runTorn(t, tc, testFormat, false); msg != "" {
				t.Fatal(msg)
			}
		})
	}
}

// TestTornWriteNegativeControl removes the two rules TestTornWrite proves,
// one at a time, and shows that the table then fails: without the CRC
// check a flipped body byte is read as a record; without the truncation
// at open the frame appended after a torn tail is lost behind it.
func TestTornWriteNegativeControl(t *testing.T) {
	noCRC := testFormat
	noCRC.private.skipCRC = true
	for _, rule := range []struct {
		name         string
		format       Format
		skipTruncate bool
	}{{"no CRC check", noCRC, false}, {"no torn-tail truncation", testFormat, true}} {
		t.Run(rule.name, func(t *testing.T) {
			failed := 0
			for _, tc := range tornCases {
				if msg := runTorn(t, tc, rule.format, rule.skipTruncate); msg != "" {
					t.Logf("%s: %s", tc.name, msg)
					failed++
				}
			}
			if failed == 0 {
				t.Fatal("the torn-write table passes with the rule removed: it proves nothing")
			}
		})
	}
}

// crashRun has writers append and wait concurrently, takes a crash clone
// (torn, keeping a random part of unsynced tails) while they run, and
// returns the acknowledged records the clone lost.
func crashRun(t *testing.T, seed uint64, skipSync bool) (lost int) {
	fs := memFS(t)
	o := testOptions(fs)
	o.private.skipSync = skipSync
	w, _, _ := open(t, o)
	const writers, each = 4, 30
	var mu sync.Mutex
	acked := map[string]bool{}
	var crashed *errorfs.MemFS
	var wg sync.WaitGroup
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				b := fmt.Appendf(nil, "w%d-%d", g, i)
				tk, err := w.Append(b)
				if err == nil {
					err = w.Wait(tk)
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				acked[string(b)] = true
				if g == 0 && i == each/2 {
					// Everything acknowledged so far must survive.
					crashed = fs.TornCrashClone(rand.New(rand.NewPCG(seed, 7)))
					for k := range acked {
						acked[k] = false // false: must survive
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	w.Close(true)
	o.FS = crashed
	_, _, got := open(t, o)
	have := map[string]bool{}
	for _, b := range got {
		have[string(b)] = true
	}
	for k, later := range acked {
		if !later && !have[k] {
			lost++
		}
	}
	return lost
}

// TestCrashClone: with concurrent writers sharing fsyncs, a crash (only
// synced bytes kept, plus a torn part of the unsynced tail) never loses a
// record whose Wait returned.
func TestCrashClone(t *testing.T) {
	for seed := range uint64(20) {
		if lost := crashRun(t, seed, false); lost != 0 {
			t.Fatalf("seed %d: %d acknowledged records lost in a crash", seed, lost)
		}
	}
}

// TestCrashCloneNegativeControl removes the rule (Wait returns only after
// an fsync covering its ticket) and shows acknowledged records lost.
func TestCrashCloneNegativeControl(t *testing.T) {
	lost := 0
	for seed := range uint64(20) {
		lost += crashRun(t, seed, true)
	}
	if lost == 0 {
		t.Fatal("no acknowledged record lost without fsync: the crash test proves nothing")
	}
	t.Logf("without fsync, %d acknowledged records lost over 20 crashes", lost)
}

// A failed fsync is never acknowledged, and the log refuses every later
// write (the file's state is unknown).
func TestFailedSyncIsSticky(t *testing.T) {
	for _, through := range []bool{false, true} {
		t.Run(fmt.Sprint("writeThrough=", through), func(t *testing.T) {
			efs := errorfs.Wrap(memFS(t))
			o := testOptions(efs)
			o.WriteThrough = through
			w, _, _ := open(t, o)
			defer w.Close(true)
			tk, _ := w.Append(body(0))
			if err := w.Wait(tk); err != nil {
				t.Fatal(err)
			}
			efs.Inject(errorfs.Rule{Op: errorfs.OpSync, PathContains: "test.log", Count: 1})
			tk, err := w.Append(body(1))
			if err == nil {
				err = w.Wait(tk)
			}
			if !errors.Is(err, errorfs.ErrInjected) {
				t.Fatalf("wait with a failing fsync: %v", err)
			}
			if _, err := w.Append(body(2)); !errors.Is(err, errorfs.ErrInjected) || !errors.Is(w.Err(), errorfs.ErrInjected) {
				t.Fatalf("append after a failed fsync: %v", err)
			}
		})
	}
}

// A full disk in the middle of a write (a short write) breaks the log;
// the reopen cuts the partial frame and keeps what was acknowledged.
func TestShortWrite(t *testing.T) {
	mem := memFS(t)
	efs := errorfs.Wrap(mem)
	o := testOptions(efs)
	w, _, _ := open(t, o)
	for i := range 3 {
		tk, _ := w.Append(body(i))
		if err := w.Wait(tk); err != nil {
			t.Fatal(err)
		}
	}
	efs.SetSpace(frameLen / 2)
	tk, _ := w.Append(body(3))
	if err := w.Wait(tk); !errors.Is(err, errorfs.ENOSPC) {
		t.Fatalf("wait on a full disk: %v", err)
	}
	w.Close(true)
	efs.Clear()
	w, rec, got := open(t, o)
	defer w.Close(true)
	if len(got) != 3 || rec.End != HeaderLen+3*frameLen || rec.Size != rec.End+frameLen/2 {
		t.Fatalf("after a short write: %d records, %+v", len(got), rec)
	}
	if size, _, _ := w.Stats(); size != int64(rec.End) {
		t.Fatalf("file not cut: %d", size)
	}
}

// No file until the first write; a creation that fails leaves nothing and
// is not sticky (buffered: its frames are kept for the next write; write
// through: the append fails and appends nothing).
func TestCreatedByFirstWrite(t *testing.T) {
	for _, through := range []bool{false, true} {
		t.Run(fmt.Sprint("writeThrough=", through), func(t *testing.T) {
			efs := errorfs.Wrap(memFS(t))
			o := testOptions(efs)
			o.WriteThrough = through
			path := filepath.Join("/data", "test.log")
			w, rec, _ := open(t, o)
			if rec.Exists || !w.Unborn() {
				t.Fatalf("a log with no file: %+v", rec)
			}
			w.Close(false)
			if _, err := efs.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("an unwritten log made a file: %v", err)
			}
			w, _, _ = open(t, o)
			efs.Inject(errorfs.Rule{Op: errorfs.OpSync, PathContains: "test.log", Count: 1})
			tk, err := w.Append(body(0))
			if err == nil {
				err = w.Wait(tk)
			}
			if !errors.Is(err, errorfs.ErrInjected) {
				t.Fatalf("creation with a failing fsync: %v", err)
			}
			if _, err := efs.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a failed creation left a file: %v", err)
			}
			tk, err = w.Append(body(1))
			if err == nil {
				err = w.Wait(tk)
			}
			if err != nil {
				t.Fatalf("write after a failed creation: %v", err)
			}
			w.Close(false)
			_, _, got := open(t, o)
			want := 1 // write through: the failed append appended nothing
			if !through {
				want = 2 // buffered: its frame went out with the next write
			}
			if len(got) != want || !bytes.Equal(got[len(got)-1], body(1)) {
				t.Fatalf("after reopen: %q", got)
			}
		})
	}
}

// A file holding part of a header is a creation that never finished: the
// log is unborn. Anything else that is not the header is an error.
func TestHeaders(t *testing.T) {
	fs := memFS(t)
	o := testOptions(fs)
	path := filepath.Join("/data", "test.log")
	for _, c := range []struct {
		data   string
		unborn bool
	}{{"", true}, {"MB", true}, {"MBRT\x00\x01\x00", true}, {"XX", false}, {"XXXXXXXXXXXX", false}, {"MBRT\x00\x02\x00\x00", false}} {
		if err := vfs.WriteFileAtomic(fs, "/data", path, []byte(c.data)); err != nil {
			t.Fatal(err)
		}
		w, rec, err := Open(o, func(int, []byte) error { return nil })
		if c.unborn {
			if err != nil || !w.Unborn() || !rec.Exists {
				t.Fatalf("%q: %v %+v", c.data, err, rec)
			}
			w.Close(true)
		} else if !errors.Is(err, ErrBadHeader) {
			t.Fatalf("%q: %v, want ErrBadHeader", c.data, err)
		}
	}
}

// A rewrite replaces the file with the live state; a rewrite whose rename
// fails leaves the log appending to the old file, complete.
func TestRewrite(t *testing.T) {
	efs := errorfs.Wrap(memFS(t))
	o := testOptions(efs)
	w, _, _ := open(t, o)
	for i := range 10 {
		tk, _ := w.Append(body(i))
		must(t, w.Wait(tk))
	}
	efs.Inject(errorfs.Rule{Op: errorfs.OpRename, PathContains: "test.log", Count: 1})
	if err := w.Rewrite(AppendFrame(nil, []byte("live")), 1); !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("rewrite with a failing rename: %v", err)
	}
	tk, _ := w.Append(body(10))
	must(t, w.Wait(tk))
	w.Close(false)
	w, _, got := open(t, o)
	if len(got) != 11 {
		t.Fatalf("after a failed rewrite: %d records", len(got))
	}
	_, _ = w.Append(body(11)) // queued; the rewrite's state includes it
	must(t, w.Rewrite(AppendFrame(nil, []byte("live")), 1))
	if size, base, n := w.Stats(); size != base || n != 1 || size != HeaderLen+FrameHeaderLen+4 {
		t.Fatalf("after rewrite: size %d base %d records %d", size, base, n)
	}
	tk, _ = w.Append(body(12))
	must(t, w.Wait(tk))
	w.Close(false)
	_, _, got = open(t, o)
	if fmt.Sprintf("%s", got) != "[live record-012]" {
		t.Fatalf("after rewrite: %s", got)
	}
}

// An error from the caller's fn fails the Open.
func TestOpenFnError(t *testing.T) {
	fs := memFS(t)
	o := testOptions(fs)
	writeRecords(t, o, 2)
	bad := errors.New("bad record")
	if _, _, err := Open(o, func(int, []byte) error { return bad }); !errors.Is(err, bad) {
		t.Fatalf("open: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// FuzzScan: no input panics the scanner, and the valid end never passes
// the data.
func FuzzScan(f *testing.F) {
	seed := testFormat.AppendHeader(nil)
	for i := range 3 {
		seed = AppendFrame(seed, body(i))
	}
	f.Add(seed[HeaderLen:], false)
	f.Add(seed[HeaderLen:], true)
	f.Fuzz(func(t *testing.T, tail []byte, resync bool) {
		data := append(testFormat.AppendHeader(nil), tail...)
		end, damaged, err := testFormat.Scan(data, ScanOptions{Resync: resync}, func(off int, b []byte) error {
			if off < HeaderLen || off+FrameHeaderLen+len(b) > len(data) {
				t.Fatalf("frame at %d of %d bytes outside the data", off, len(b))
			}
			return nil
		})
		if err != nil || end > len(data) || end < HeaderLen {
			t.Fatalf("end %d of %d, %v", end, len(data), err)
		}
		for _, d := range damaged {
			if d.From >= d.To || d.To > end {
				t.Fatalf("damage %v with end %d", d, end)
			}
		}
	})
}

// A Private log's file is owner-only (0600) after its creation and after
// a rewrite, even when a stale temp file with a wider mode is left over;
// without Private it is 0644 (the control).
func TestPrivateMode(t *testing.T) {
	for _, private := range []bool{true, false} {
		t.Run(fmt.Sprint("private=", private), func(t *testing.T) {
			dir := t.TempDir()
			o := Options{FS: vfs.Default, Dir: dir, Name: "secret.log", Format: testFormat, WriteThrough: true, Private: private}
			path := filepath.Join(dir, "secret.log")
			want := os.FileMode(0o644)
			if private {
				want = 0o600
			}
			mode := func() os.FileMode {
				fi, err := os.Stat(path)
				if err != nil {
					t.Fatal(err)
				}
				return fi.Mode().Perm()
			}
			w, _, _ := open(t, o)
			tk, err := w.Append(body(0))
			must(t, err)
			must(t, w.Wait(tk))
			if m := mode(); m != want {
				t.Fatalf("after creation: mode %v, want %v", m, want)
			}
			must(t, os.WriteFile(path+".tmp", []byte("stale"), 0o644))
			must(t, w.Rewrite(AppendFrame(nil, body(1)), 1))
			if m := mode(); m != want {
				t.Fatalf("after rewrite over a stale 0644 temp file: mode %v, want %v", m, want)
			}
			must(t, w.Close(false))
		})
	}
}

// runTooLarge appends records around refused ones (a body over MaxRecord,
// through Append, AppendFrames and Rewrite), reopens, and returns what is
// wrong ("" if nothing).
func runTooLarge(t *testing.T, writeThrough, skipBound bool) string {
	fs := memFS(t)
	o := testOptions(fs)
	o.Format.MaxRecord = 64
	o.WriteThrough, o.private.skipRecordBound = writeThrough, skipBound
	w, _, _ := open(t, o)
	var msgs []string
	appendWait := func(bodies ...[]byte) error {
		tk, err := w.Append(bodies...)
		if err == nil {
			err = w.Wait(tk)
		}
		return err
	}
	must(t, appendWait(body(0)))
	big := bytes.Repeat([]byte("x"), 65)
	if err := appendWait(body(1), big); !errors.Is(err, ErrTooLarge) {
		msgs = append(msgs, fmt.Sprintf("Append of a %d-byte body: %v, want ErrTooLarge", len(big), err))
	}
	if _, err := w.AppendFrames(AppendFrame(nil, big), 1); !errors.Is(err, ErrTooLarge) {
		msgs = append(msgs, fmt.Sprintf("AppendFrames of a %d-byte body: %v", len(big), err))
	}
	if err := w.Err(); err != nil {
		msgs = append(msgs, fmt.Sprintf("sticky error after a refusal: %v", err))
	}
	must(t, appendWait(body(2)))
	if err := w.Rewrite(AppendFrame(AppendFrame(nil, body(0)), big), 2); !errors.Is(err, ErrTooLarge) {
		msgs = append(msgs, fmt.Sprintf("Rewrite with a %d-byte body: %v", len(big), err))
	}
	must(t, appendWait(body(3)))
	must(t, w.Close(false))
	_, rec, got := open(t, o)
	if want := "[record-000 record-002 record-003]"; fmt.Sprintf("%s", got) != want {
		msgs = append(msgs, fmt.Sprintf("reopened: %d records %q, want %s (file %d bytes, valid to %d)", len(got), got, want, rec.Size, rec.End))
	}
	return strings.Join(msgs, "; ")
}

// TestTooLarge: a frame longer than MaxRecord is refused with ErrTooLarge,
// nothing of the call is written, the log stays usable, and reopening
// reads every record written before and after. The negative control
// writes the long frame: reopening then stops at it (a torn tail) and
// loses every record after it.
func TestTooLarge(t *testing.T) {
	for _, wt := range []bool{false, true} {
		t.Run(fmt.Sprint("writeThrough=", wt), func(t *testing.T) {
			if msg := runTooLarge(t, wt, false); msg != "" {
				t.Fatal(msg)
			}
			msg := runTooLarge(t, wt, true)
			t.Logf("negative control (no bound on writes): %s", msg)
			if msg == "" {
				t.Fatal("passes without the bound: it proves nothing")
			}
		})
	}
}

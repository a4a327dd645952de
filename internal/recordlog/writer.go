package recordlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/minibroker/minibroker/internal/vfs"
)

// Options opens a log.
type Options struct {
	FS     vfs.FS
	Dir    string // the directory (fsynced after a creation or rewrite)
	Name   string // the file's name in Dir
	Format Format
	// Scan says how Open reads the file.
	Scan ScanOptions
	// WriteThrough makes Append write its frames to the file at once (and
	// create an unborn log's file, fsynced, before it returns), so a
	// failure is the caller's to see; the caller serialises Appends.
	// Without it Append only queues them and the next Wait writes
	// everything queued with one write and one fsync, so the caller's
	// lock is never held across a write.
	WriteThrough bool
	// Private makes the file owner-only (mode 0600), for secrets: its
	// creation and every rewrite go through a temp file made afresh with
	// that mode (vfs.WriteFileAtomicPrivate), so a stale temp file with a
	// wider mode is never reused.
	Private bool

	// private are the test seams (knobs.go; the writer's: skipSync,
	// skipRecordBound, skipTruncate): unexported, so no config file, flag
	// or API sets them; the zero value is production. Only this package's
	// tests set them.
	private knobs
}

// Recovered describes what Open found.
type Recovered struct {
	Exists  bool     // a file was there (possibly only a torn header)
	Size    int      // its length in bytes
	End     int      // where its valid frames end (Size unless cut)
	Records int      // valid frames read
	Damaged []Damage // stretches skipped (Resync only)
}

// Writer is an open log. Appends may come from one goroutine at a time
// (with WriteThrough) or from many (without); Wait may be called by many
// goroutines at once, and one fsync makes every frame appended before it
// durable (group commit).
type Writer struct {
	o    Options
	path string

	// mu guards everything below. It is held across a write only with
	// WriteThrough (Append), across an fsync never except in Rewrite,
	// which every appender must wait for anyway.
	mu       sync.Mutex
	cond     *sync.Cond // signalled when syncing ends or the state changes
	f        vfs.File   // nil while unborn (no file yet) or after Close
	size     int64      // bytes in the file
	base     int64      // size after the last Open or Rewrite
	records  int        // frames in the file and queued
	buf      []byte     // queued frames, not yet written (no WriteThrough)
	appended uint64     // tickets handed out (one per Append)
	durable  uint64     // tickets written and fsynced
	syncing  bool       // a Wait is writing and fsyncing outside mu
	err      error      // sticky: a failed write or fsync leaves the file unknown
	closed   bool
}

// Open reads the log at Dir/Name, calls fn with every valid frame (an
// error from fn fails the Open), cuts off a torn tail (truncate and
// fsync), and returns it open for appends. A log with no file is unborn:
// the first write creates it through a temp file and a rename, so a log
// that is never written leaves nothing behind; so is a file holding only
// part of a header (a creation that never finished). A leftover temp file
// of an unfinished rewrite or creation is removed.
func Open(o Options, fn func(off int, body []byte) error) (*Writer, Recovered, error) {
	w := &Writer{o: o, path: filepath.Join(o.Dir, o.Name)}
	w.cond = sync.NewCond(&w.mu)
	var rec Recovered
	_ = o.FS.Remove(w.path + ".tmp")
	data, err := vfs.ReadFile(o.FS, w.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		w.size, w.base = HeaderLen, HeaderLen // what the new file will start with
		return w, rec, nil
	case err != nil:
		return nil, rec, fmt.Errorf("read %s: %w", w.path, err)
	}
	rec.Exists, rec.Size = true, len(data)
	if o.Format.tornHeader(data) {
		w.size, w.base = HeaderLen, HeaderLen
		return w, rec, nil
	}
	if err := o.Format.CheckHeader(data); err != nil {
		return nil, rec, fmt.Errorf("%s: %w", w.path, err)
	}
	end, damaged, err := o.Format.Scan(data, o.Scan, func(off int, body []byte) error {
		rec.Records++
		return fn(off, body)
	})
	if err != nil {
		return nil, rec, err
	}
	rec.End, rec.Damaged = end, damaged
	f, err := o.FS.OpenFile(w.path, os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return nil, rec, fmt.Errorf("open %s: %w", w.path, err)
	}
	if end < len(data) && !o.private.skipTruncate {
		if err := f.Truncate(int64(end)); err != nil {
			f.Close()
			return nil, rec, fmt.Errorf("truncate torn tail of %s: %w", w.path, err)
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, rec, fmt.Errorf("sync %s: %w", w.path, err)
		}
	}
	w.f, w.size, w.base, w.records = f, int64(end), int64(end), rec.Records
	return w, rec, nil
}

// Append adds one frame per body and returns a ticket that is durable
// once Wait(ticket) returns nil. With WriteThrough an error means nothing
// was appended; without, Append fails only on a closed or broken log, or
// with ErrTooLarge: a body is longer than Format.MaxRecord, nothing was
// appended and the log is still usable (the error is not sticky).
func (w *Writer) Append(bodies ...[]byte) (uint64, error) {
	var frames []byte
	for _, b := range bodies {
		frames = AppendFrame(frames, b)
	}
	return w.AppendFrames(frames, len(bodies))
}

// AppendFrames is Append for n frames already built with AppendFrame or
// AppendFrameFunc.
func (w *Writer) AppendFrames(frames []byte, n int) (uint64, error) {
	if err := w.checkFrames(frames); err != nil {
		return 0, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.err != nil:
		return 0, w.err
	case w.closed:
		return 0, ErrClosed
	case n == 0:
		return w.appended, nil
	}
	if !w.o.WriteThrough {
		w.buf = append(w.buf, frames...)
	} else if w.f == nil {
		f, err := w.create(frames)
		if err != nil {
			return 0, err // still unborn: the next append tries again
		}
		w.f = f
		w.durable = w.appended + 1 // the creation fsynced it
	} else if _, err := w.f.Write(frames); err != nil {
		w.err = fmt.Errorf("append to %s: %w", w.path, err)
		w.cond.Broadcast()
		return 0, w.err
	}
	if w.o.WriteThrough {
		w.size += int64(len(frames))
	}
	w.records += n
	w.appended++
	return w.appended, nil
}

// Wait returns once ticket (and every ticket before it) is durable. The
// first waiter writes what is queued and fsyncs; concurrent waiters share
// that fsync.
func (w *Writer) Wait(ticket uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.durable < ticket {
		switch {
		case w.err != nil:
			return w.err
		case w.closed:
			return ErrClosed
		case w.syncing:
			w.cond.Wait()
			continue
		}
		w.syncing = true
		buf, upTo, f := w.buf, w.appended, w.f
		w.buf = nil
		w.mu.Unlock()
		var err error
		creating := f == nil
		switch {
		case creating:
			f, err = w.create(buf)
		case len(buf) > 0:
			if _, err = f.Write(buf); err == nil {
				err = w.sync(f)
			}
		default:
			err = w.sync(f)
		}
		w.mu.Lock()
		w.syncing = false
		if creating {
			if err != nil {
				// No file was made: keep the frames for the next write
				// and fail only this waiter.
				w.buf = append(buf, w.buf...)
				w.cond.Broadcast()
				return err
			}
			w.f = f
		}
		if err != nil {
			w.err = fmt.Errorf("write %s: %w", w.path, err)
		} else {
			w.durable = upTo
			if !w.o.WriteThrough {
				w.size += int64(len(buf))
			}
		}
		w.cond.Broadcast()
	}
	return nil
}

// checkFrames refuses a frame longer than a record may be (ErrTooLarge).
func (w *Writer) checkFrames(frames []byte) error {
	if w.o.private.skipRecordBound {
		return nil
	}
	if err := w.o.Format.checkFrames(frames); err != nil {
		return fmt.Errorf("append to %s: %w", w.path, err)
	}
	return nil
}

func (w *Writer) sync(f vfs.File) error {
	if w.o.private.skipSync {
		return nil
	}
	return f.Sync()
}

// create writes the log's first file, the header and frames, through a
// fsynced temp file renamed into place, and opens it for appends. Nothing
// is left behind when it fails.
func (w *Writer) create(frames []byte) (vfs.File, error) {
	data := append(w.o.Format.AppendHeader(make([]byte, 0, HeaderLen+len(frames))), frames...)
	if err := w.writeAtomic(data); err != nil {
		_ = w.o.FS.Remove(w.path + ".tmp")
		return nil, fmt.Errorf("create %s: %w", w.path, err)
	}
	return w.o.FS.OpenFile(w.path, os.O_RDWR|os.O_APPEND, 0o644)
}

// writeAtomic replaces the file with data: temp file, fsync, rename,
// directory fsync (owner-only with Private).
func (w *Writer) writeAtomic(data []byte) error {
	if w.o.Private {
		return vfs.WriteFileAtomicPrivate(w.o.FS, w.o.Dir, w.path, data)
	}
	return vfs.WriteFileAtomic(w.o.FS, w.o.Dir, w.path, data)
}

// Flush makes everything appended so far durable.
func (w *Writer) Flush() error {
	w.mu.Lock()
	t := w.appended
	w.mu.Unlock()
	return w.Wait(t)
}

// Rewrite replaces the file with frames (n of them), built by the caller
// from its live state, which must include everything appended so far:
// queued frames are dropped and every ticket becomes durable with the new
// file (temp file, fsync, rename, directory fsync). If that fails the log
// goes on appending to whichever complete file is at the path (the old
// one, or the new one when only the directory fsync failed). A frame
// longer than Format.MaxRecord fails it with ErrTooLarge, nothing written.
func (w *Writer) Rewrite(frames []byte, n int) error {
	if err := w.checkFrames(frames); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.syncing {
		w.cond.Wait()
	}
	switch {
	case w.err != nil:
		return w.err
	case w.closed:
		return ErrClosed
	}
	data := append(w.o.Format.AppendHeader(make([]byte, 0, HeaderLen+len(frames))), frames...)
	err := w.writeAtomic(data)
	if err != nil {
		_ = w.o.FS.Remove(w.path + ".tmp")
		err = fmt.Errorf("rewrite %s: %w", w.path, err)
		if w.f == nil {
			return err // unborn, and still
		}
		w.f.Close()
		w.f = nil
		fi, serr := w.o.FS.Stat(w.path)
		if serr != nil {
			w.err = err
			w.cond.Broadcast()
			return err
		}
		f, oerr := w.o.FS.OpenFile(w.path, os.O_RDWR|os.O_APPEND, 0o644)
		if oerr != nil {
			w.err = fmt.Errorf("reopen %s: %w", w.path, oerr)
			w.cond.Broadcast()
			return w.err
		}
		w.f, w.size = f, fi.Size()
		return err
	}
	f, err := w.o.FS.OpenFile(w.path, os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		w.err = fmt.Errorf("reopen %s: %w", w.path, err)
		w.cond.Broadcast()
		return w.err
	}
	if w.f != nil {
		w.f.Close()
	}
	w.f, w.size, w.base, w.records, w.buf = f, int64(len(data)), int64(len(data)), n, nil
	w.durable = w.appended
	w.cond.Broadcast()
	return nil
}

// Close flushes (unless abandon: a crash-like stop that writes nothing
// more) and closes the file.
func (w *Writer) Close(abandon bool) error {
	var err error
	if !abandon {
		err = w.Flush()
		if errors.Is(err, ErrClosed) {
			return nil
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.syncing {
		w.cond.Wait()
	}
	w.closed = true
	w.cond.Broadcast()
	if w.f == nil { // never written, or closed before
		return err
	}
	cerr := w.f.Close()
	w.f = nil
	if err == nil && !abandon {
		err = cerr
	}
	return err
}

// Err is the sticky error of a failed write or fsync (nil while usable).
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Appended is the last ticket handed out: Wait(Appended()) covers every
// frame appended so far.
func (w *Writer) Appended() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.appended
}

// Unborn reports whether the log has no file yet.
func (w *Writer) Unborn() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.f == nil && !w.closed
}

// Stats are the log's size in bytes (queued frames included), its size
// after the last Open or Rewrite, and its frame count (queued included).
func (w *Writer) Stats() (size, base int64, records int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.size + int64(len(w.buf)), w.base, w.records
}

package protocol

import (
	"encoding/binary"
	"slices"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A Fetch response is mostly record bytes, which the handler read from
// the log into pooled buffers (Request.Buffer). Encoding the response
// with kmsg copies them into the frame, a memmove of every byte served
// (a sixth of the broker's CPU serving 10 KiB records). Instead the frame
// is written as pieces: the response encoded by kmsg without the large
// record sets (the shell), and between its parts the record sets' length
// prefixes and the handler's own buffers, or the segment files the
// record sets are in, sent with sendfile(2) (Request.AddFileRecords, the
// copies of reading them and writing them saved). The bytes on the wire
// are the same as kmsg's encoding of the whole response
// (TestFetchPiecesEqualKmsg).
//
// kmsg exposes no offsets into its encoding, so the shell's split points
// are found by encoding it twice: once with each large record set
// replaced by an empty one, once by a one-byte one. After the frame's size
// field (which differs) the two encodings are equal up to the first such
// field, where the length prefixes differ
// (Fetch v12+: compact bytes, uvarint length+1, one byte for both;
// before: an int32 length, whose last byte differs); after the one-byte
// content they are equal again up to the next field.

// splitMin is the smallest record set written from its own buffer; smaller
// ones are copied into the shell (a piece costs a write of its own when
// the connection's write buffer holds data). The broker sends record sets
// from files (Request.AddFileRecords) from the same size.
const splitMin = 64 << 10

// SendFileMin is the smallest record set worth sending from its file: a
// smaller one is read and copied into the frame.
const SendFileMin = splitMin

// A piece of a frame: bytes, or a record set to send from a file.
type piece struct {
	b    []byte
	file *fileRecords
}

func (p piece) len() int {
	if p.file != nil {
		return p.file.n
	}
	return len(p.b)
}

// fetchPieces appends a Fetch response frame to buf as pieces in order,
// returns them, and the grown buf and scratch buffers for reuse. Pieces
// alias buf, the response's large record sets, which must stay unchanged
// until the pieces are written, and files (sorted by topic and partition
// index), whose partitions' record sets are the files' bytes. With no
// record set of splitMin bytes and no file it returns one piece, the
// whole frame.
func fetchPieces(buf, scratch []byte, corr int32, f *kmsg.FetchResponse, files []fileRecords, pieces []piece) ([]piece, []byte, []byte) {
	type large struct {
		t, p int
		recs []byte       // the record set (for a file: the response's own, empty)
		file *fileRecords // or the file holding it
	}
	var sets []large // in encoding order
	k := 0
	for i := range f.Topics {
		for j := range f.Topics[i].Partitions {
			for k < len(files) && (files[k].t < i || files[k].t == i && files[k].p < j) {
				k++ // no such partition in the response
			}
			r := f.Topics[i].Partitions[j].RecordBatches
			switch {
			case k < len(files) && files[k].t == i && files[k].p == j:
				sets = append(sets, large{i, j, r, &files[k]})
				k++
			case len(r) >= splitMin:
				sets = append(sets, large{i, j, r, nil})
			}
		}
	}
	set := func(v func(l large) []byte) {
		for _, l := range sets {
			f.Topics[l.t].Partitions[l.p].RecordBatches = v(l)
		}
	}
	start := len(buf)
	if len(sets) == 0 {
		buf = appendResponse(buf, corr, f)
		return append(pieces, piece{b: buf[start:]}), buf, scratch
	}
	empty, one := []byte{}, []byte{0}
	set(func(large) []byte { return empty })
	buf = appendResponse(buf, corr, f)
	set(func(large) []byte { return one })
	scratch = appendResponse(scratch[:0], corr, f)
	set(func(l large) []byte { return l.recs })
	// The prefixes go after the shell in buf, which must not move once
	// pieces alias it.
	end := len(buf)
	buf = slices.Grow(buf, 5*len(sets))
	shell, probe := buf[start:end], scratch

	flexible := f.Version >= 12
	prefixLen, lastDiff := 4, 3 // int32 length: 0 and 1 differ in its last byte
	if flexible {
		prefixLen, lastDiff = 1, 0 // uvarint(0+1), uvarint(1+1)
	}
	size := len(shell) - 4 // the frame's size field counts what follows it
	first := len(pieces)
	a, b, from := 4, 4, 0 // the frame sizes differ: compare what follows them
	for _, l := range sets {
		for a < len(shell) && b < len(probe) && shell[a] == probe[b] {
			a++
			b++
		}
		if a == len(shell) || b == len(probe) || a-lastDiff < from {
			// Not the encoding described above: copy the records in.
			set(func(l large) []byte {
				if l.file != nil {
					return l.file.read()
				}
				return l.recs
			})
			buf = appendResponse(buf[:start], corr, f)
			set(func(l large) []byte { return l.recs })
			return append(pieces[:first], piece{b: buf[start:]}), buf, scratch
		}
		field := a - lastDiff // where the length prefix starts
		b += prefixLen - lastDiff + 1
		a = field + prefixLen
		pieces = append(pieces, piece{b: shell[from:field]})
		n := len(l.recs)
		p := piece{b: l.recs}
		if l.file != nil {
			n, p = l.file.n, piece{file: l.file}
		}
		pre := len(buf)
		if flexible {
			buf = kbin.AppendUvarint(buf, uint32(n+1))
		} else {
			buf = kbin.AppendInt32(buf, int32(n))
		}
		pieces = append(pieces, piece{b: buf[pre:len(buf):len(buf)]}, p)
		size += len(buf) - pre - prefixLen + n
		from = a
	}
	pieces = append(pieces, piece{b: shell[from:]})
	binary.BigEndian.PutUint32(shell, uint32(size))
	return pieces, buf, scratch
}

// read returns the file's bytes, for the fallback that copies record sets
// into the frame. A short read (the file was truncated) returns fewer: the
// frame stays well formed with its record set cut short, which clients
// read as a partial last batch.
func (fr *fileRecords) read() []byte {
	b := make([]byte, fr.n)
	n, _ := fr.f.ReadAt(b, fr.pos)
	return b[:n]
}

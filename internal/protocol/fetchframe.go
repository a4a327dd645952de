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
// prefixes and the handler's own buffers. The bytes on the wire are the
// same as kmsg's encoding of the whole response (TestFetchPiecesEqualKmsg).
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
// the connection's write buffer holds data).
const splitMin = 64 << 10

// fetchPieces appends a Fetch response frame to buf as pieces in order,
// returns them, and the grown buf and scratch buffers for reuse. Pieces
// alias buf, and the response's large record sets, which must stay
// unchanged until the pieces are written. With no record set of splitMin
// bytes it returns one piece, the whole frame.
func fetchPieces(buf, scratch []byte, corr int32, f *kmsg.FetchResponse, pieces [][]byte) ([][]byte, []byte, []byte) {
	type at struct{ t, p int }
	var where []at     // the large record sets' partitions, in encoding order
	var large [][]byte // their record sets
	for i := range f.Topics {
		for j := range f.Topics[i].Partitions {
			if r := f.Topics[i].Partitions[j].RecordBatches; len(r) >= splitMin {
				where, large = append(where, at{i, j}), append(large, r)
			}
		}
	}
	set := func(v func(k int) []byte) {
		for k, w := range where {
			f.Topics[w.t].Partitions[w.p].RecordBatches = v(k)
		}
	}
	start := len(buf)
	if len(large) == 0 {
		buf = appendResponse(buf, corr, f)
		return append(pieces, buf[start:]), buf, scratch
	}
	empty, one := []byte{}, []byte{0}
	set(func(int) []byte { return empty })
	buf = appendResponse(buf, corr, f)
	set(func(int) []byte { return one })
	scratch = appendResponse(scratch[:0], corr, f)
	set(func(k int) []byte { return large[k] })
	// The prefixes go after the shell in buf, which must not move once
	// pieces alias it.
	end := len(buf)
	buf = slices.Grow(buf, 5*len(large))
	shell, probe := buf[start:end], scratch

	flexible := f.Version >= 12
	prefixLen, lastDiff := 4, 3 // int32 length: 0 and 1 differ in its last byte
	if flexible {
		prefixLen, lastDiff = 1, 0 // uvarint(0+1), uvarint(1+1)
	}
	size := len(shell) - 4 // the frame's size field counts what follows it
	first := len(pieces)
	a, b, from := 4, 4, 0 // the frame sizes differ: compare what follows them
	for _, recs := range large {
		for a < len(shell) && b < len(probe) && shell[a] == probe[b] {
			a++
			b++
		}
		if a == len(shell) || b == len(probe) || a-lastDiff < from {
			// Not the encoding described above: copy the records in.
			buf = appendResponse(buf[:start], corr, f)
			return append(pieces[:first], buf[start:]), buf, scratch
		}
		field := a - lastDiff // where the length prefix starts
		b += prefixLen - lastDiff + 1
		a = field + prefixLen
		pieces = append(pieces, shell[from:field])
		pre := len(buf)
		if flexible {
			buf = kbin.AppendUvarint(buf, uint32(len(recs)+1))
		} else {
			buf = kbin.AppendInt32(buf, int32(len(recs)))
		}
		pieces = append(pieces, buf[pre:len(buf):len(buf)], recs)
		size += len(buf) - pre - prefixLen + len(recs)
		from = a
	}
	pieces = append(pieces, shell[from:])
	binary.BigEndian.PutUint32(shell, uint32(size))
	return pieces, buf, scratch
}

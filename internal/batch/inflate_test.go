package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

func TestInflateCodecs(t *testing.T) {
	plain := []byte(strings.Repeat("record bytes ", 100))
	var gz, l4 bytes.Buffer
	gw := gzip.NewWriter(&gz)
	gw.Write(plain)
	gw.Close()
	lw := lz4.NewWriter(&l4)
	lw.Write(plain)
	lw.Close()
	enc, _ := zstd.NewWriter(nil)
	zs := enc.EncodeAll(plain, nil)
	enc.Close()
	raw := s2.EncodeSnappy(nil, plain)
	xerial := []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}
	for _, chunk := range [][]byte{plain[:500], plain[500:]} {
		block := s2.EncodeSnappy(nil, chunk)
		xerial = binary.BigEndian.AppendUint32(xerial, uint32(len(block)))
		xerial = append(xerial, block...)
	}
	for _, c := range []struct {
		name  string
		codec int8
		data  []byte
	}{
		{"gzip", CodecGzip, gz.Bytes()},
		{"lz4", CodecLZ4, l4.Bytes()},
		{"zstd", CodecZstd, zs},
		{"snappy raw", CodecSnappy, raw},
		{"snappy xerial", CodecSnappy, xerial},
	} {
		got, err := Inflate(c.codec, c.data, 1<<20)
		if err != nil || !bytes.Equal(got, plain) {
			t.Errorf("%s: %v, %d bytes", c.name, err, len(got))
		}
		if _, err := Inflate(c.codec, c.data, 100); err == nil {
			t.Errorf("%s: the 100-byte bound was not enforced", c.name)
		} else if !errors.Is(err, ErrInflatedTooLarge) {
			t.Errorf("%s: %v, want ErrInflatedTooLarge", c.name, err)
		}
	}
}

package logtool

import (
	"encoding/hex"
	"os"
	"strings"
	"testing"
)

// unhexDump reverses encoding/hex.Dump (the golden files of internal/log).
func unhexDump(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	for _, line := range strings.Split(string(data), "\n") {
		if len(line) < 10 {
			continue
		}
		body := line[10:]
		if i := strings.Index(body, "|"); i >= 0 {
			body = body[:i]
		}
		b, err := hex.DecodeString(strings.Join(strings.Fields(body), ""))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, b...)
	}
	return out
}

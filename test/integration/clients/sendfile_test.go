package clients

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/minibrokertest"
)

// sentFromFiles reads minibroker_network_bytes_sent_from_files_total.
func sentFromFiles(t *testing.T, c *minibrokertest.Cluster) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^minibroker_network_bytes_sent_from_files_total (\S+)$`).
		FindStringSubmatch(itest.HttpGet(t, "http://"+c.HTTPAddr()+"/metrics"))
	if m == nil {
		t.Fatal("no minibroker_network_bytes_sent_from_files_total in /metrics")
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// sendfileValue is record i's value: its size varies from 1 KiB to 40 KiB.
func sendfileValue(i int) []byte {
	rng := rand.New(rand.NewPCG(uint64(i), 9))
	v := make([]byte, 1<<10+rng.IntN(39<<10))
	for j := range v {
		v[j] = byte(rng.Uint32())
	}
	return v
}

// TestConsumeSentFromFiles: Fetch record sets sent from the segment files
// with sendfile(2) reach kgo and kcat (librdkafka) exactly, across
// segment ends, and only once this broker has verified the bytes: after a
// restart the first reader's fetches are read (and checked) and send
// nothing from files; the next reader's are sent from files.
func TestConsumeSentFromFiles(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, minibrokertest.Topic("files", 2), minibrokertest.HTTP(),
		minibrokertest.Set("log.segment.bytes", strconv.Itoa(1<<20)))
	cl := itest.NewClient(t, c.Addr(), kgo.DefaultProduceTopic("files"), kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const n = 600 // about 12 MiB
	for i := range n {
		cl.Produce(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: sendfileValue(i)}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Error(err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// Each reader reads the whole topic: about 12 MiB.
	readKgo := func(pass string) {
		t.Helper()
		recs := itest.ConsumeAll(t, c.Addr(), "files", n)
		seen := map[int]bool{}
		for _, r := range recs {
			i, err := strconv.Atoi(string(r.Key))
			if err != nil || seen[i] || !bytes.Equal(r.Value, sendfileValue(i)) {
				t.Fatalf("%s: record %q at %d/%d: a duplicate or not the value produced", pass, r.Key, r.Partition, r.Offset)
			}
			seen[i] = true
		}
	}
	readKcat := func(pass string) { // every key with its value's size
		t.Helper()
		got := map[string]bool{}
		for p := range 2 {
			out, _ := itest.RunKcat(t, "", "-C", "-b", c.Addr(), "-t", "files", "-p", strconv.Itoa(p), "-o", "beginning", "-e", "-q", "-f", "%k %S\n")
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				got[line] = true
			}
		}
		for i := range n {
			if want := fmt.Sprintf("%d %d", i, len(sendfileValue(i))); !got[want] {
				t.Fatalf("%s: kcat did not read %q (%d lines)", pass, want, len(got))
			}
		}
	}
	sent := func(read func(string), pass string) float64 {
		t.Helper()
		before := sentFromFiles(t, c)
		read(pass)
		return sentFromFiles(t, c) - before
	}
	const most = 10 << 20
	if b := sent(readKgo, "kgo, appended by this broker"); b < most {
		t.Fatalf("kgo: %.0f bytes sent from files", b)
	}
	if b := sent(readKcat, "kcat, appended by this broker"); b < most {
		t.Fatalf("kcat: %.0f bytes sent from files", b)
	}
	c.Restart()
	if b := sent(readKgo, "kgo, first reading after a restart"); b != 0 {
		t.Fatalf("%.0f bytes not yet verified by this broker sent from files", b)
	}
	if b := sent(readKcat, "kcat, second reading after a restart"); b < most {
		t.Fatalf("%.0f bytes sent from files once verified", b)
	}
	// Every span was closed once sent: a truncation (a mirror's) has none
	// to wait for.
	p, _ := c.Broker().Partition("files", 0)
	start := time.Now()
	if err := p.TruncateTo(p.Offsets().LogEnd / 2); err != nil || time.Since(start) > 5*time.Second {
		t.Fatalf("TruncateTo after the reads: %v after %v", err, time.Since(start))
	}
}

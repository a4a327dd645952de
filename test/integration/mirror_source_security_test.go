package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/minibroker/minibroker/internal/batch"
	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/minibrokertest"
)

// syncBuffer is a log sink tests read while the broker writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}
func (b *syncBuffer) Sync() error { return nil }
func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// debugLogger logs everything, at debug level, to buf.
func debugLogger(buf *syncBuffer) *zap.Logger {
	enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	return zap.New(zapcore.NewCore(enc, buf, zapcore.DebugLevel))
}

// adminCall sends a JSON request to a broker's admin API and returns the
// status and the raw answer.
func adminCall(t *testing.T, method, url string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, url, rd)
	// As the CLI: JSON, and the header a browser's cross-site form cannot send.
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Minibroker-Admin", "test")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}

// waitMirror polls describe until ok accepts it.
func waitMirror(t *testing.T, b *minibrokertest.Cluster, name string, what string, ok func(mirror.Status) bool) mirror.Status {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var st mirror.Status
	for time.Now().Before(deadline) {
		var err error
		if st, err = b.Broker().Mirrors().Describe(name); err == nil && ok(st) {
			return st
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("mirror %s: not %s after 30s: %+v", name, what, st)
	return st
}

// caughtUpTo accepts a status whose partitions are all MIRRORING with
// their local high watermark at ends.
func caughtUpTo(ends map[int32]int64) func(mirror.Status) bool {
	return func(st mirror.Status) bool {
		if len(st.Partitions) != len(ends) {
			return false
		}
		for _, p := range st.Partitions {
			if p.State != mirror.Mirroring || p.LocalHighWatermark != ends[p.Partition] {
				return false
			}
		}
		return true
	}
}

// sourceEnds lists a source topic's end offsets per partition.
func sourceEnds(t *testing.T, cl *kgo.Client, topic string) map[int32]int64 {
	t.Helper()
	ends, err := kadm.NewClient(cl).ListEndOffsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

// sourceRawLog fetches a partition's batches from a source as it stores
// them (one raw Fetch at a time, from offset 0 to end).
func sourceRawLog(t *testing.T, cl *kgo.Client, topic string, p int32, end int64) []byte {
	t.Helper()
	md, err := kadm.NewClient(cl).Metadata(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	td := md.Topics[topic]
	leader := td.Partitions[p].Leader
	var out []byte
	for from := int64(0); from < end; {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxBytes, req.MaxWaitMillis = -1, 16<<20, 0
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, td.ID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = p, from, 16<<20, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		kresp, err := cl.Broker(int(leader)).Request(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		resp := kresp.(*kmsg.FetchResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("source fetch %s-%d at %d: %+v", topic, p, from, resp)
		}
		it := batch.NewIter(resp.Topics[0].Partitions[0].RecordBatches)
		n := 0
		for b, h, ok := it.Next(); ok; b, h, ok = it.Next() {
			out = append(out, b...)
			from = h.LastOffset() + 1
			n++
		}
		if n == 0 {
			t.Fatalf("source fetch %s-%d at %d: no batch", topic, p, from)
		}
	}
	return out
}

const (
	srcAdminPass  = "admin-Secret-1"
	srcMirrorPass = "mirror-Pa55word-7f3a"
)

// secureKfake is a kfake source that requires SASL_SSL (SCRAM-SHA-512)
// over a certificate signed by pki's CA, with users admin and mirror.
func secureKfake(t *testing.T, pki *srcPKI, clusterID string, extra ...kfake.Opt) (*kfake.Cluster, *kgo.Client) {
	t.Helper()
	src, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.ClusterID(clusterID),
		kfake.TLS(pki.serverTLS(false, "localhost", "127.0.0.1")), kfake.EnableSASL(),
		kfake.Superuser("SCRAM-SHA-512", "admin", srcAdminPass), kfake.Superuser("SCRAM-SHA-512", "mirror", srcMirrorPass),
		kfake.SeedTopics(2, "orders")}, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(src.Close)
	admin := newClient(t, src.ListenAddrs()[0], kgo.DialTLSConfig(pki.clientTLS()),
		kgo.SASL(scram.Auth{User: "admin", Pass: srcAdminPass}.AsSha512Mechanism()),
		kgo.DefaultProduceTopic("orders"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	return src, admin
}

func produceN(t *testing.T, cl *kgo.Client, prefix string, n int) {
	t.Helper()
	var recs []*kgo.Record
	for i := 0; i < n; i++ {
		recs = append(recs, &kgo.Record{Value: fmt.Appendf(nil, "%s-%d", prefix, i)})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func scramJaas(user, pass string) string {
	return `org.apache.kafka.common.security.scram.ScramLoginModule required username="` + user + `" password="` + pass + `";`
}

// assertNoSecret fails when any of the texts holds the password.
func assertNoSecret(t *testing.T, password string, texts map[string]string) {
	t.Helper()
	for where, text := range texts {
		if text == "" {
			t.Fatalf("%s: empty, nothing was checked", where)
		}
		if strings.Contains(text, password) {
			t.Fatalf("%s shows the password", where)
		}
	}
}

// TestMirrorSourceSASLSSL mirrors a kfake source that requires SASL_SSL
// with SCRAM-SHA-512 over a certificate signed by a CA the test made:
// the settings go through the admin API by Kafka's client names, the
// mirror is byte-identical, fails over with its barrier, and the password
// shows nowhere: not in describe, list or the admin API's JSON, not in
// mirrors.json, not in the broker's debug log; the settings file is 0600.
func TestMirrorSourceSASLSSL(t *testing.T) {
	t.Parallel()
	pki := newSrcPKI(t, "src")
	src, admin := secureKfake(t, pki, "kfake-secure")
	produceN(t, admin, "first", 200)

	var logs syncBuffer
	b := minibrokertest.Start(t, minibrokertest.HTTP(), minibrokertest.Logger(debugLogger(&logs)))
	base := "http://" + b.HTTPAddr() + "/v1/mirrors"
	cfg := map[string]string{
		"security.protocol":       "SASL_SSL",
		"sasl.mechanism":          "SCRAM-SHA-512",
		"sasl.jaas.config":        scramJaas("mirror", srcMirrorPass),
		"ssl.truststore.location": pki.CAFile,
	}
	if code, raw := adminCall(t, "POST", base, map[string]any{"name": "secure", "source": src.ListenAddrs(), "source_config": cfg}); code != http.StatusOK {
		t.Fatalf("create: %d %s", code, raw)
	}
	if code, raw := adminCall(t, "POST", base+"/secure/start", map[string]any{"topics": []string{"orders"}}); code != http.StatusOK {
		t.Fatalf("start: %d %s", code, raw)
	}
	produceN(t, admin, "second", 200)
	ends := sourceEnds(t, admin, "orders")
	st := waitMirror(t, b, "secure", "caught up", caughtUpTo(ends))
	for p, end := range ends {
		want := sourceRawLog(t, admin, "orders", p, end)
		got := rawLog(t, b, "orders", p, 0, end)
		if !bytes.Equal(got, want) {
			t.Fatalf("orders-%d: mirrored %d bytes differ from the source's %d", p, len(got), len(want))
		}
	}
	if st.SourceConfig["sasl.jaas.config"] != mirror.Hidden || st.SourceConfig["security.protocol"] != "SASL_SSL" {
		t.Fatalf("describe's source config: %v", st.SourceConfig)
	}

	_, described := adminCall(t, "GET", base+"/secure", nil)
	_, listed := adminCall(t, "GET", base, nil)
	stateFile, _ := os.ReadFile(filepath.Join(b.DataDir(), "mirrors.json"))
	if !strings.Contains(string(described), `"sasl.jaas.config":"[hidden]"`) {
		t.Fatalf("describe JSON: %s", described)
	}
	fi, err := os.Stat(filepath.Join(b.DataDir(), "mirror-sources.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mirror-sources.json: %v %v, want mode 0600", fi.Mode(), err)
	}
	secrets, _ := os.ReadFile(filepath.Join(b.DataDir(), "mirror-sources.json"))
	if !strings.Contains(string(secrets), srcMirrorPass) {
		t.Fatal("mirror-sources.json does not hold the settings")
	}

	// Failover: the barrier ends every partition and names the source.
	b.Mirror("secure").Stop()
	for p := range ends {
		hs, bs := batchesOf(t, b, "orders", p, 0, logEnd(b, "orders", p))
		last := len(hs) - 1
		if !batch.IsBarrier(&hs[last], bs[last]) || hs[last].BaseOffset != ends[p] {
			t.Fatalf("orders-%d: no barrier at %d", p, ends[p])
		}
		c, _ := batch.ReadControl(bs[last])
		var v batch.MirrorPidResetRecord
		if err := v.ReadFrom(c.Value); err != nil || v.SourceClusterID != "kfake-secure" {
			t.Fatalf("barrier value %+v %v", v, err)
		}
	}
	_, stopped := adminCall(t, "GET", base+"/secure", nil)
	assertNoSecret(t, srcMirrorPass, map[string]string{"describe JSON": string(described), "list JSON": string(listed),
		"describe after stop": string(stopped), "mirrors.json": string(stateFile), "broker log": logs.String()})

	// Deleting the mirror deletes its secrets.
	if code, raw := adminCall(t, "DELETE", base+"/secure", nil); code != http.StatusOK {
		t.Fatalf("delete: %d %s", code, raw)
	}
	secrets, _ = os.ReadFile(filepath.Join(b.DataDir(), "mirror-sources.json"))
	assertNoSecret(t, srcMirrorPass, map[string]string{"mirror-sources.json after delete": string(secrets)})
}

// TestMirrorSourceRotatedPasswordRecovers: the source rotates the
// mirror's password; when the mirror reconnects (here, after a restart of
// the destination, which also reloads the settings from disk) it stops
// getting data, its partitions stay read-only, and it resumes from where
// it was once the source config is fixed through the admin API. kfake
// closes the connection on a wrong password instead of answering
// SASL_AUTHENTICATION_FAILED as Kafka does, so here the mirror cannot
// tell it from a network error and retries (describe shows the error);
// against a minibroker source the partitions go FAILED
// (TestMirrorSourceMinibrokerSCRAM).
func TestMirrorSourceRotatedPasswordRecovers(t *testing.T) {
	t.Parallel()
	pki := newSrcPKI(t, "src")
	src, admin := secureKfake(t, pki, "kfake-rotating")
	produceN(t, admin, "first", 100)

	var logs syncBuffer
	b := minibrokertest.Start(t, minibrokertest.HTTP(), minibrokertest.Logger(debugLogger(&logs)))
	cfg := func(pass string) map[string]string {
		return map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
			"sasl.jaas.config": scramJaas("mirror", pass), "ssl.truststore.location": pki.CAFile}
	}
	ms := b.Broker().Mirrors()
	if err := ms.CreateWith("rot", src.ListenAddrs(), mirror.CreateOptions{SourceConfig: cfg(srcMirrorPass)}); err != nil {
		t.Fatal(err)
	}
	b.Mirror("rot").Start("orders")
	before := sourceEnds(t, admin, "orders")
	waitMirror(t, b, "rot", "caught up", caughtUpTo(before))

	const newPass = "rotated-Pa55-9c1e"
	altered, err := kadm.NewClient(admin).AlterUserSCRAMs(context.Background(), nil,
		[]kadm.UpsertSCRAM{{User: "mirror", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: newPass}}) // kfake always announces 4096
	if err == nil {
		err = altered.Error()
	}
	if err != nil {
		t.Fatalf("rotate: %v", err)
	}
	b.Restart()
	produceN(t, admin, "second", 100)
	waitMirror(t, b, "rot", "refused by the source", func(st mirror.Status) bool {
		for _, p := range st.Partitions {
			if p.FetchErrors == 0 || p.LastError == "" {
				return false
			}
		}
		return true
	})
	for p, end := range before {
		if got := logEnd(b, "orders", p); got != end {
			t.Fatalf("orders-%d: mirrored to %d with a rotated password (was %d)", p, got, end)
		}
	}
	prod := newClient(t, b.Addr(), kgo.DefaultProduceTopic("orders"), kgo.RecordRetries(0))
	if err := prod.ProduceSync(context.Background(), &kgo.Record{Value: []byte("x")}).FirstErr(); err == nil {
		t.Fatal("a mirrored partition took a produce")
	}

	base := "http://" + b.HTTPAddr() + "/v1/mirrors/rot"
	if code, raw := adminCall(t, "PUT", base+"/source-config", map[string]any{"source_config": cfg(newPass)}); code != http.StatusOK {
		t.Fatalf("alter: %d %s", code, raw)
	}
	ends := sourceEnds(t, admin, "orders")
	defer func() {
		if t.Failed() {
			t.Log(logs.String()[max(0, len(logs.String())-6000):])
		}
	}()
	waitMirror(t, b, "rot", "caught up after the fix", caughtUpTo(ends))
	for p, end := range ends {
		if got, want := rawLog(t, b, "orders", p, 0, end), sourceRawLog(t, admin, "orders", p, end); !bytes.Equal(got, want) {
			t.Fatalf("orders-%d differs from the source after recovery", p)
		}
	}
	_, described := adminCall(t, "GET", base, nil)
	assertNoSecret(t, newPass, map[string]string{"describe JSON": string(described), "broker log": logs.String()})
	assertNoSecret(t, srcMirrorPass, map[string]string{"broker log": logs.String()})
}

// TestMirrorSourceSecurityRefused: the negative controls. The same mirror
// with no credentials, a wrong password, an untrusted CA (also with the
// host name check off, which must still verify the chain), a certificate
// for another host, PLAINTEXT against TLS, and no client certificate where
// the source requires one, is refused at start with the source's or the
// TLS layer's error; the right settings start (positive controls, same
// sources).
func TestMirrorSourceSecurityRefused(t *testing.T) {
	t.Parallel()
	pki, other := newSrcPKI(t, "src"), newSrcPKI(t, "other")
	sasl, _ := secureKfake(t, pki, "kfake-sasl")
	wrongHost, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "hosts"),
		kfake.TLS(pki.serverTLS(false, "other.example")))
	if err != nil {
		t.Fatal(err)
	}
	defer wrongHost.Close()
	mtls, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "certs"),
		kfake.TLS(pki.serverTLS(true, "localhost", "127.0.0.1")))
	if err != nil {
		t.Fatal(err)
	}
	defer mtls.Close()
	_, clientKeystore := pki.issue("mirror-client", true)

	b := minibrokertest.Start(t)
	ms := b.Broker().Mirrors()
	saslCfg := func(pass, ca string) map[string]string {
		return map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
			"sasl.jaas.config": scramJaas("mirror", pass), "ssl.truststore.location": ca}
	}
	with := func(cfg map[string]string, k, v string) map[string]string {
		out := map[string]string{k: v}
		for kk, vv := range cfg {
			if kk != k {
				out[kk] = vv
			}
		}
		return out
	}
	cases := []struct {
		name   string
		source []string
		topic  string
		cfg    map[string]string
		want   string // "" = starts
	}{
		{"sasl-ok", sasl.ListenAddrs(), "orders", saslCfg(srcMirrorPass, pki.CAFile), ""},
		{"sasl-no-credentials", sasl.ListenAddrs(), "orders", map[string]string{"security.protocol": "SSL", "ssl.truststore.location": pki.CAFile}, "SASL missing"},
		{"sasl-wrong-password", sasl.ListenAddrs(), "orders", saslCfg("wrong-"+srcMirrorPass, pki.CAFile), "EOF"},
		{"sasl-untrusted-ca", sasl.ListenAddrs(), "orders", saslCfg(srcMirrorPass, other.CAFile), "certificate signed by unknown authority"},
		{"sasl-untrusted-ca-no-hostname-check", sasl.ListenAddrs(), "orders",
			with(saslCfg(srcMirrorPass, other.CAFile), "ssl.endpoint.identification.algorithm", ""), "certificate signed by unknown authority"},
		{"sasl-plaintext-to-tls", sasl.ListenAddrs(), "orders", nil, "TLS missing"},
		{"host-checked", wrongHost.ListenAddrs(), "hosts", map[string]string{"security.protocol": "SSL", "ssl.truststore.location": pki.CAFile},
			"cannot validate certificate for 127.0.0.1"},
		{"host-not-checked", wrongHost.ListenAddrs(), "hosts", map[string]string{"security.protocol": "SSL", "ssl.truststore.location": pki.CAFile,
			"ssl.endpoint.identification.algorithm": ""}, ""},
		{"mtls-no-keystore", mtls.ListenAddrs(), "certs", map[string]string{"security.protocol": "SSL", "ssl.truststore.location": pki.CAFile},
			"certificate required"},
		{"mtls-ok", mtls.ListenAddrs(), "certs", map[string]string{"security.protocol": "SSL", "ssl.truststore.location": pki.CAFile,
			"ssl.keystore.location": clientKeystore}, ""},
	}
	for _, c := range cases {
		if err := ms.CreateWith(c.name, c.source, mirror.CreateOptions{SourceConfig: c.cfg}); err != nil {
			t.Fatalf("%s: create: %v", c.name, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := ms.Start(ctx, c.name, []string{c.topic})
		cancel()
		switch {
		case c.want == "" && err != nil:
			t.Fatalf("%s: refused: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Fatalf("%s: %v, want an error with %q", c.name, err, c.want)
		case c.want == "":
			b.Mirror(c.name).Stop()
		}
		if err != nil && strings.Contains(err.Error(), srcMirrorPass) {
			t.Fatalf("%s: the error shows the password", c.name)
		}
	}
}

// TestMirrorSourceRefusedFailsAndRecovers: a mirror whose source settings
// stop being accepted (here an alter to a truststore of another CA, as
// when the source's certificate is renewed from a CA the mirror does not
// trust) goes FAILED with the TLS error in describe, stays read-only, and
// recovers from its local log end once the settings are fixed.
func TestMirrorSourceRefusedFailsAndRecovers(t *testing.T) {
	t.Parallel()
	pki, other := newSrcPKI(t, "src"), newSrcPKI(t, "other")
	src, admin := secureKfake(t, pki, "kfake-refused")
	produceN(t, admin, "first", 100)
	b := minibrokertest.Start(t, minibrokertest.HTTP())
	cfg := func(ca string) map[string]string {
		return map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
			"sasl.jaas.config": scramJaas("mirror", srcMirrorPass), "ssl.truststore.location": ca}
	}
	if err := b.Broker().Mirrors().CreateWith("m", src.ListenAddrs(), mirror.CreateOptions{SourceConfig: cfg(pki.CAFile)}); err != nil {
		t.Fatal(err)
	}
	b.Mirror("m").Start("orders")
	waitMirror(t, b, "m", "caught up", caughtUpTo(sourceEnds(t, admin, "orders")))

	base := "http://" + b.HTTPAddr() + "/v1/mirrors/m"
	if code, raw := adminCall(t, "PUT", base+"/source-config", map[string]any{"source_config": cfg(other.CAFile)}); code != http.StatusOK {
		t.Fatalf("alter: %d %s", code, raw)
	}
	produceN(t, admin, "second", 100)
	waitMirror(t, b, "m", "FAILED", func(st mirror.Status) bool {
		for _, p := range st.Partitions {
			if p.State != mirror.Failed || !strings.Contains(p.Reason, "certificate signed by unknown authority") {
				return false
			}
		}
		return len(st.Partitions) == 2
	})
	prod := newClient(t, b.Addr(), kgo.DefaultProduceTopic("orders"), kgo.RecordRetries(0))
	if err := prod.ProduceSync(context.Background(), &kgo.Record{Value: []byte("x")}).FirstErr(); err == nil {
		t.Fatal("a FAILED mirrored partition took a produce")
	}
	if code, raw := adminCall(t, "PUT", base+"/source-config", map[string]any{"source_config": cfg(pki.CAFile)}); code != http.StatusOK {
		t.Fatalf("alter: %d %s", code, raw)
	}
	ends := sourceEnds(t, admin, "orders")
	waitMirror(t, b, "m", "caught up after the fix", caughtUpTo(ends))
	for p, end := range ends {
		if got, want := rawLog(t, b, "orders", p, 0, end), sourceRawLog(t, admin, "orders", p, end); !bytes.Equal(got, want) {
			t.Fatalf("orders-%d differs from the source after recovery", p)
		}
	}
}

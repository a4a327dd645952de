// Helpers shared by the mirror tests: sources behind SASL/TLS (kfake and
// minibroker), the admin calls and waits a mirror test makes, transactions
// on a mirrored source, topic filters and crash points. The general helpers,
// and the mirrored clusters every barrier test builds (rawCluster, chain,
// mirrorHooks), are in helpers_test.go. The rule each test proves is mapped
// in doc.go.

package itest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
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

var ErrCrash = errors.New("simulated crash")

// OpenTxnFailoverSource builds, on a fresh cluster, the source side of the
// issue-27 scenario on ledger-0:
//
//	0..10   plain records
//	11..15  T2's records (committed: its marker at 17)
//	16      T1's record, left open: the source's LSO stays 16
//	17      T2's COMMIT marker, past the source's LSO
//
// and commits offset 16 (the source's LSO, with its leader epoch) for each
// group. A mirror of it stops at 16 with T2 still open locally (its local
// LSO is 11), so the failover cuts 11..15. The returned func aborts T1.
func OpenTxnFailoverSource(t *testing.T, groups ...string) (*minibrokertest.Cluster, func()) {
	t.Helper()
	a := minibrokertest.Start(t, minibrokertest.Topic("ledger", 1))
	ctx := context.Background()
	ProduceSerially(t, IdempotentProducer(t, a.Addr()), "ledger", 0, "plain", 11)
	t2 := MirrorTxnProducer(t, a.Addr(), "t2")
	t1 := MirrorTxnProducer(t, a.Addr(), "t1")
	if err := t2.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if err := t2.ProduceSync(ctx, &kgo.Record{Topic: "ledger", Value: fmt.Appendf(nil, "t2-%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := t1.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := t1.ProduceSync(ctx, &kgo.Record{Topic: "ledger", Value: []byte("t1-0")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := t2.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if o := MustPartition(t, a, "ledger", 0).Offsets(); o.LastStable != 16 || o.LogEnd != 18 {
		t.Fatalf("source offsets %+v, want LSO 16 and log end 18", o)
	}
	epoch := MustPartition(t, a, "ledger", 0).LeaderEpoch()
	adm := kadm.NewClient(NewClient(t, a.Addr()))
	for _, g := range groups {
		os := kadm.Offsets{}
		os.Add(kadm.Offset{Topic: "ledger", Partition: 0, At: 16, LeaderEpoch: epoch})
		if r, err := adm.CommitOffsets(ctx, g, os); err != nil || r.Error() != nil {
			t.Fatalf("commit %s on the source: %v %v", g, err, r.Error())
		}
	}
	return a, func() { t1.EndTransaction(ctx, kgo.TryAbort) }
}

func MustCLIOn(t *testing.T, p *BrokerProc, args ...string) string {
	t.Helper()
	out, err := RunCLI(t, append(args, "--admin="+p.HttpAddr)...)
	if err != nil {
		t.Fatalf("minibroker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// ProduceTo writes n records "prefix-i" round-robin to a topic.
func ProduceTo(t *testing.T, addr, topic, prefix string, n int) {
	t.Helper()
	cl := NewClient(t, addr, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	var recs []*kgo.Record
	for i := 0; i < n; i++ {
		recs = append(recs, &kgo.Record{Value: fmt.Appendf(nil, "%s-%d", prefix, i)})
	}
	Must(t, "produce", cl.ProduceSync(context.Background(), recs...).FirstErr())
}

// DescribeTopicConfigs answers a topic's overrides (DescribeConfigs,
// entries whose source is the topic).
func DescribeTopicConfigs(t *testing.T, addr, topic string) map[string]string {
	t.Helper()
	rcs, err := KadmClient(t, addr).DescribeTopicConfigs(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range rc.Configs {
		if c.Source == kmsg.ConfigSourceDynamicTopicConfig && c.Value != nil {
			out[c.Key] = *c.Value
		}
	}
	return out
}

func KmsgStr(s string) *string { return &s }

// SrcPKI is a certificate authority made by a test (never checked in),
// with PEM files in Kafka's PEM store layout: a truststore of the CA, and
// keystores of a private key followed by its certificate chain.
type SrcPKI struct {
	t    *testing.T
	dir  string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// CAFile is the truststore (ssl.truststore.location).
	CAFile string
}

func NewSrcPKI(t *testing.T, name string) *SrcPKI {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          srcPKINextSerial(),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	p := &SrcPKI{t: t, dir: t.TempDir(), cert: cert, key: key}
	p.CAFile = filepath.Join(p.dir, name+"-ca.pem")
	if err := os.WriteFile(p.CAFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Issue signs a leaf certificate for the names (DNS names or IPs) and
// returns it as a tls.Certificate and as a PEM keystore file (key, then
// the chain).
func (p *SrcPKI) Issue(cn string, client bool, names ...string) (tls.Certificate, string) {
	p.t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		p.t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: srcPKINextSerial(),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if client {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.cert, &key.PublicKey, p.key)
	if err != nil {
		p.t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		p.t.Fatal(err)
	}
	var buf bytes.Buffer
	pem.Encode(&buf, &pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: der})
	pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: p.cert.Raw})
	file := filepath.Join(p.dir, cn+"-keystore.pem")
	if err := os.WriteFile(file, buf.Bytes(), 0o600); err != nil {
		p.t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(buf.Bytes(), buf.Bytes())
	if err != nil {
		p.t.Fatal(err)
	}
	return pair, file
}

// pool is the CA as a certificate pool.
func (p *SrcPKI) pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(p.cert)
	return pool
}

// ServerTLS is a listener's TLS config serving a certificate for names;
// requireClient asks for a client certificate signed by this CA (mTLS).
func (p *SrcPKI) ServerTLS(requireClient bool, names ...string) *tls.Config {
	cert, _ := p.Issue("server", false, names...)
	c := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if requireClient {
		c.ClientAuth, c.ClientCAs = tls.RequireAndVerifyClientCert, p.pool()
	}
	return c
}

// clientTLS is a client's TLS config trusting this CA.
func (p *SrcPKI) clientTLS() *tls.Config {
	return &tls.Config{RootCAs: p.pool(), MinVersion: tls.VersionTLS12}
}

// SyncBuffer is a log sink tests read while the broker writes.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) Sync() error { return nil }

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// DebugLogger logs everything, at debug level, to buf.
func DebugLogger(buf *SyncBuffer) *zap.Logger {
	enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	return zap.New(zapcore.NewCore(enc, buf, zapcore.DebugLevel))
}

// AdminCall sends a JSON request to a broker's admin API and returns the
// status and the raw answer.
func AdminCall(t *testing.T, method, url string, body any) (int, []byte) {
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

// WaitMirror polls describe until ok accepts it.
func WaitMirror(t *testing.T, b *minibrokertest.Cluster, name string, what string, ok func(mirror.Status) bool) mirror.Status {
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

// CaughtUpTo accepts a status whose partitions are all MIRRORING with
// their local high watermark at ends.
func CaughtUpTo(ends map[int32]int64) func(mirror.Status) bool {
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

// SourceEnds lists a source topic's end offsets per partition.
func SourceEnds(t *testing.T, cl *kgo.Client, topic string) map[int32]int64 {
	t.Helper()
	ends, err := kadm.NewClient(cl).ListEndOffsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

// SourceRawLog fetches a partition's batches from a source as it stores
// them (one raw Fetch at a time, from offset 0 to end).
func SourceRawLog(t *testing.T, cl *kgo.Client, topic string, p int32, end int64) []byte {
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
	SrcMirrorPass = "mirror-Pa55word-7f3a"
)

// SecureKfake is a kfake source that requires SASL_SSL (SCRAM-SHA-512)
// over a certificate signed by pki's CA, with users admin and mirror.
func SecureKfake(t *testing.T, pki *SrcPKI, clusterID string, extra ...kfake.Opt) (*kfake.Cluster, *kgo.Client) {
	t.Helper()
	src, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.ClusterID(clusterID),
		kfake.TLS(pki.ServerTLS(false, "localhost", "127.0.0.1")), kfake.EnableSASL(),
		kfake.Superuser("SCRAM-SHA-512", "admin", srcAdminPass), kfake.Superuser("SCRAM-SHA-512", "mirror", SrcMirrorPass),
		kfake.SeedTopics(2, "orders")}, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(src.Close)
	admin := NewClient(t, src.ListenAddrs()[0], kgo.DialTLSConfig(pki.clientTLS()),
		kgo.SASL(scram.Auth{User: "admin", Pass: srcAdminPass}.AsSha512Mechanism()),
		kgo.DefaultProduceTopic("orders"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	return src, admin
}

func ProduceN(t *testing.T, cl *kgo.Client, prefix string, n int) {
	t.Helper()
	var recs []*kgo.Record
	for i := 0; i < n; i++ {
		recs = append(recs, &kgo.Record{Value: fmt.Appendf(nil, "%s-%d", prefix, i)})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func ScramJaas(user, pass string) string {
	return `org.apache.kafka.common.security.scram.ScramLoginModule required username="` + user + `" password="` + pass + `";`
}

// AssertNoSecret fails when any of the texts holds the password.
func AssertNoSecret(t *testing.T, password string, texts map[string]string) {
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

func MirrorTxnProducer(t *testing.T, addr, txnID string) *kgo.Client {
	return NewClient(t, addr, kgo.TransactionalID(txnID), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionTimeout(30*time.Second))
}

// MirrorTxn produces values to partition p in one transaction.
func MirrorTxn(t *testing.T, cl *kgo.Client, topic string, p int32, vals []string, commit bool) {
	t.Helper()
	ctx := context.Background()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, v := range vals {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatal(err)
	}
}

func srcPKINextSerial() *big.Int {
	srcPKISerial.Lock()
	defer srcPKISerial.Unlock()
	srcPKISerial.n++
	return big.NewInt(time.Now().UnixNano() + srcPKISerial.n)
}

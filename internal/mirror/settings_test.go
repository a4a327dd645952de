package mirror

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minibroker/minibroker/internal/vfs"
)

// Every setting's default parses, none is a secret (__mirror_state is
// readable by Fetch: a secret would belong in mirror-sources.log), and the
// defaults are KIP-1279's where the table says nothing else.
func TestSettingsTable(t *testing.T) {
	s, err := ResolveSettings(nil)
	if err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, d := range SettingsTable() {
		if d.Secret {
			t.Errorf("%s is secret but would be kept in __mirror_state", d.Name)
		}
		if !strings.HasPrefix(d.Name, "mirror.") {
			t.Errorf("%s: not a mirror.* name", d.Name)
		}
	}
	if len(s.TopicsInclude) != 0 || !slices.Equal(s.TopicsExclude, []string{"__.*"}) ||
		!slices.Equal(s.GroupsInclude, []string{".*"}) || s.MetadataRefresh != 30*time.Second ||
		s.ThrottledRate != 0 || s.FailedRetryMaxAttempts != 10 || s.FailedRetryInitialBackoff != time.Second ||
		s.FailedRetryMaxBackoff != 300*time.Second || s.FetchWaitMax != 100*time.Millisecond ||
		s.FailoverMode != FailoverTruncateToLSO || s.FailoverMode.fetchIsolation() != 1 {
		t.Fatalf("defaults: %+v", s)
	}
	for _, p := range []string{"min.insync.replicas", "unclean.leader.election.enable", "leader.replication.throttled.replicas",
		"follower.replication.throttled.replicas", "message.timestamp.type", "mirror.name"} {
		if !s.PropertyExcluded(p) {
			t.Errorf("%s not excluded by default", p)
		}
	}
	if s.PropertyExcluded("retention.ms") || s.PropertyExcluded("min.insync.replicas.x") {
		t.Error("retention.ms or a longer name excluded: patterns must be anchored")
	}
	// No include list: no topic is selected (only topics named are mirrored).
	if s.TopicSelected("orders") {
		t.Error("a topic selected with an empty mirror.topics.include")
	}
}

func TestSettingsParse(t *testing.T) {
	s, err := ResolveSettings(map[string]string{
		SettingTopicsInclude:          "orders.*, pay{1,3}ments",
		SettingTopicPropertiesExclude: "retention\\..*",
		SettingMetadataRefreshMs:      "250",
		SettingThrottledRate:          "1048576",
	})
	if err != nil {
		t.Fatal(err)
	}
	for topic, want := range map[string]bool{"orders": true, "orders-eu": true, "payyments": true, "pay{1": false,
		"__orders": false, "xorders": false, "__consumer_offsets": false} {
		if got := s.TopicSelected(topic); got != want {
			t.Errorf("TopicSelected(%q) = %v, want %v", topic, got, want)
		}
	}
	if !s.PropertyExcluded("retention.ms") || s.PropertyExcluded("min.insync.replicas") {
		t.Error("a property list given replaces the default one")
	}
	if s.MetadataRefresh != 250*time.Millisecond || s.ThrottledRate != 1<<20 {
		t.Fatalf("%+v", s)
	}
	s, err = ResolveSettings(map[string]string{SettingTopicsInclude: ".*", SettingTopicsExclude: "tmp-.*"})
	if err != nil {
		t.Fatal(err)
	}
	if !s.TopicSelected("__consumer_offsets") || s.TopicSelected("tmp-1") {
		t.Error("an exclude list given replaces the default __.*")
	}

	for _, bad := range []map[string]string{
		{"mirror.topics.includes": "x"},
		{"security.protocol": "SSL"},
		{SettingTopicsInclude: "orders("},
		{SettingMetadataRefreshMs: "0"},
		{SettingMetadataRefreshMs: "10s"},
		{SettingThrottledRate: "-1"},
		{SettingFailedRetryMaxAttempts: "many"},
		{SettingFailedRetryInitialMs: "5000", SettingFailedRetryMaxMs: "1000"},
	} {
		if _, err := ResolveSettings(bad); !errors.Is(err, ErrBadRequest) {
			t.Errorf("%v: %v, want ErrBadRequest", bad, err)
		} else {
			for k := range bad {
				if !strings.Contains(err.Error(), k) {
					t.Errorf("%v: error %q does not name %s", bad, err, k)
				}
			}
		}
	}
}

func TestSplitList(t *testing.T) {
	for in, want := range map[string][]string{
		"":                  nil,
		" a , b ,,":         {"a", "b"},
		"a{1,3},b":          {"a{1,3}", "b"},
		"(x|y),[a,b],c\\,d": {"(x|y)", "[a,b]", "c\\,d"}, // an escaped comma is the regexp's
	} {
		if got := splitList(in); !slices.Equal(got, want) {
			t.Errorf("splitList(%q) = %q, want %q", in, got, want)
		}
	}
	// joinList and splitList round-trip the old lists of mirrors.json.
	items := []string{"a{1,3}", "tmp-.*"}
	if got := splitList(joinList(items)); !slices.Equal(got, items) {
		t.Errorf("round trip %q", got)
	}
}

func TestAlterSettings(t *testing.T) {
	old := map[string]string{SettingTopicsInclude: "a.*", SettingThrottledRate: "100"}
	got, err := alterSettings(old, map[string]string{SettingThrottledRate: "200"}, []string{SettingTopicsInclude})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[SettingThrottledRate] != "200" || old[SettingTopicsInclude] != "a.*" {
		t.Fatalf("got %v, old %v", got, old)
	}
	if _, err := alterSettings(old, map[string]string{"nope": "1"}, nil); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("unknown: %v", err)
	}
	if _, err := alterSettings(old, nil, []string{"nope"}); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("unknown reset: %v", err)
	}
}

// A mirrors.json written before the settings (groups_include and
// groups_exclude lists) is read into mirror.groups.include/exclude, moved
// into __mirror_state, and written back without the old fields.
func TestOldGroupListsMigrate(t *testing.T) {
	dir := t.TempDir()
	old := `{"version":1,"mirrors":[{"name":"m","source":["h:1"],"groups_include":["app-.*","b{1,2}"],` +
		`"groups_exclude":["app-tmp"],"topics":{}}]}`
	if err := os.WriteFile(filepath.Join(dir, legacyMirrorsFile), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	st, d, _, err := openAt(t, vfs.Default, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	spec := d.Mirrors[0]
	s, err := ResolveSettings(spec.Config)
	if err != nil {
		t.Fatal(err)
	}
	for g, want := range map[string]bool{"app-1": true, "bb": true, "app-tmp": false, "other": false} {
		if s.GroupSelected(g) != want {
			t.Errorf("GroupSelected(%q) != %v (config %v)", g, want, spec.Config)
		}
	}
	if err := st.saveDoc(d); err != nil {
		t.Fatal(err)
	}
	var raw []byte
	must(t, st.state.t.Replay(func(_, value []byte) { raw = append(raw, value...) }))
	if strings.Contains(string(raw), "groups_include") || !strings.Contains(string(raw), SettingGroupsInclude) {
		t.Fatalf("rewritten: %s", raw)
	}
}

// mirror.failover.mode takes its two values, and the KIP's fetches
// read_uncommitted; anything else is refused, naming the setting.
func TestSettingFailoverMode(t *testing.T) {
	s, err := ResolveSettings(map[string]string{SettingFailoverMode: " abort-open-transactions "})
	if err != nil || s.FailoverMode != FailoverAbortOpenTxns || s.FailoverMode.fetchIsolation() != 0 {
		t.Fatalf("abort-open-transactions: %+v %v", s.FailoverMode, err)
	}
	for _, bad := range []string{"", "abort", "TRUNCATE-TO-LSO"} {
		_, err := ResolveSettings(map[string]string{SettingFailoverMode: bad})
		if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), SettingFailoverMode) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

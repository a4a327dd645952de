package mirror

import (
	"fmt"
	"maps"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// A mirror's settings, by KIP-1279's names (mirror.*). This table is the
// one place that knows them: name, default, how a value is parsed and
// checked, whether it may change while the mirror runs, whether it is a
// secret. A mirror keeps the values it was given (its spec's Config, in
// __mirror_state: no setting here is a secret, so none goes to
// mirror-sources.log); Settings is what code reads, resolved from them
// with the defaults.
//
// To add a setting: one settingDef below and one field in Settings. A
// secret setting would have to be kept in mirror-sources.log, not in
// __mirror_state (TestSettingsTable checks that none is marked secret).
//
// Lists (…include, …exclude) are comma-separated, as Kafka's LIST type;
// unlike Kafka, a comma inside (), [] or {} does not split, so a regular
// expression such as a{1,3} is one pattern (Kafka would cut it in two).

// Setting names.
const (
	SettingTopicsInclude          = "mirror.topics.include"
	SettingTopicsExclude          = "mirror.topics.exclude"
	SettingGroupsInclude          = "mirror.groups.include"
	SettingGroupsExclude          = "mirror.groups.exclude"
	SettingTopicPropertiesExclude = "mirror.topic.properties.exclude"
	SettingMetadataRefreshMs      = "mirror.metadata.refresh.interval.ms"
	SettingFetchWaitMaxMs         = "mirror.fetch.wait.max.ms"
	SettingThrottledRate          = "mirror.replication.throttled.rate"
	SettingFailedRetryInitialMs   = "mirror.failed.retry.initial.backoff.ms"
	SettingFailedRetryMaxMs       = "mirror.failed.retry.max.backoff.ms"
	SettingFailedRetryMaxAttempts = "mirror.failed.retry.max.attempts"
	SettingACLInclude             = "mirror.acl.include"
	SettingFailoverMode           = "mirror.failover.mode"
	SettingTopicDeletedPolicy     = "mirror.topic.deleted.policy"
)

// Values of mirror.topic.deleted.policy: what the refresh does with a
// mirrored topic the source deleted (discover.go).
const (
	TopicDeletedFail = "fail" // FAILED, read-only: the operator fails it over (KIP-1279)
	TopicDeletedStop = "stop" // stopped as `mirror stop` would: barrier, writable
)

// FailoverMode is what STOPPING does with the transactions open in the
// local log (mirror.failover.mode).
type FailoverMode string

const (
	// FailoverTruncateToLSO (the default): the mirror fetches
	// read_committed, and STOPPING cuts the log at its LSO before the
	// barrier: everything past the first open transaction goes,
	// non-transactional records included.
	FailoverTruncateToLSO FailoverMode = "truncate-to-lso"
	// FailoverAbortOpenTxns (KIP-1279's June 2026 revision): the mirror
	// fetches read_uncommitted, and STOPPING writes an ABORT marker for
	// each transaction open in the local log before the barrier, keeping
	// every record.
	FailoverAbortOpenTxns FailoverMode = "abort-open-transactions"
)

// fetchIsolation is the isolation level of the mirror's fetches in mode
// m: read_uncommitted (0) when STOPPING aborts open transactions, else
// read_committed (1).
func (m FailoverMode) fetchIsolation() int8 {
	if m == FailoverAbortOpenTxns {
		return 0
	}
	return 1
}

// defaultTopicPropertiesExclude is KIP-1279's default of
// mirror.topic.properties.exclude: settings that belong to the cluster a
// topic lives on, not to its data (mirror.name is KIP-1279's own marker of
// a mirror topic and is always excluded there).
const defaultTopicPropertiesExclude = "follower.replication.throttled.replicas,leader.replication.throttled.replicas," +
	"message.timestamp.difference.max.ms,log.message.timestamp.before.max.ms,log.message.timestamp.after.max.ms," +
	"message.timestamp.type,unclean.leader.election.enable,min.insync.replicas,mirror.name"

// Settings is a mirror's settings resolved: every value set or defaulted.
// Read it with Manager.Settings (or liveMirror.settings inside the package);
// it is replaced, never changed in place, when a setting is altered.
type Settings struct {
	// TopicsInclude selects the source topics `mirror start` without
	// topics mirrors, and the refresh then picks up as they appear
	// (anchored regular expressions; empty: only topics named).
	TopicsInclude []string
	// TopicsExclude removes topics from TopicsInclude's selection.
	TopicsExclude []string
	// GroupsInclude and GroupsExclude select the source groups whose
	// committed offsets are synced.
	GroupsInclude, GroupsExclude []string
	// TopicPropertiesExclude names the topic configs never copied from
	// the source (anchored regular expressions).
	TopicPropertiesExclude []string
	// MetadataRefresh is how often the mirror looks at the source's
	// topics (new topics, partitions, configs, deletions).
	MetadataRefresh time.Duration
	// FetchWaitMax is the long poll of a mirror fetch.
	FetchWaitMax time.Duration
	// ThrottledRate bounds the mirror's fetched bytes per second, all
	// partitions together; 0: unlimited.
	ThrottledRate int64
	// FailedRetry* bound the retries of a partition FAILED for a
	// retriable reason (0 attempts: no retry).
	FailedRetryInitialBackoff, FailedRetryMaxBackoff time.Duration
	FailedRetryMaxAttempts                           int
	// ACLInclude selects the source ACLs synced (aclsync.go: "*" or
	// TOPIC;name;operation;permission;principal, "*" fields for any).
	ACLInclude []string
	// FailoverMode is what a failover does with open transactions, and
	// so the isolation of the mirror's fetches.
	FailoverMode FailoverMode
	// TopicDeletedPolicy is TopicDeletedFail or TopicDeletedStop.
	TopicDeletedPolicy string

	topicFilter, groupFilter patternFilter
	propsExclude             patternFilter
}

// TopicSelected reports whether a source topic is selected by the topic
// include and exclude lists.
func (s *Settings) TopicSelected(topic string) bool { return s.topicFilter.match(topic) }

// GroupSelected reports whether a source group's offsets are synced.
func (s *Settings) GroupSelected(group string) bool { return s.groupFilter.match(group) }

// PropertyExcluded reports whether a topic config is never copied.
func (s *Settings) PropertyExcluded(name string) bool {
	// mirror.source.cluster.id: how a minibroker source mirrors the topic
	// itself (cycle.go), never a property of the copy.
	return name == ConfigMirrorName || name == ConfigMirrorSourceClusterID || s.propsExclude.matchAny(name)
}

// settingDef is one row of the table.
type settingDef struct {
	name string
	def  string // the default, as a value would be given
	// kip is KIP-1279's default when it differs from def, or a note on
	// where minibroker's setting differs (shown by docs only).
	kip string
	// dynamic settings may be altered on a running mirror; the others
	// only at create.
	dynamic bool
	secret  bool
	// set parses and checks v and stores it in s.
	set func(s *Settings, v string) error
}

var settingDefs = []settingDef{
	{name: SettingTopicsInclude, def: "", dynamic: true, set: func(s *Settings, v string) (err error) {
		s.TopicsInclude, err = parsePatterns(v)
		return err
	}},
	{name: SettingTopicsExclude, def: "__.*", dynamic: true, set: func(s *Settings, v string) (err error) {
		s.TopicsExclude, err = parsePatterns(v)
		return err
	}},
	{name: SettingGroupsInclude, def: ".*", dynamic: true, set: func(s *Settings, v string) (err error) {
		s.GroupsInclude, err = parsePatterns(v)
		return err
	}},
	{name: SettingGroupsExclude, def: "", dynamic: true, set: func(s *Settings, v string) (err error) {
		s.GroupsExclude, err = parsePatterns(v)
		return err
	}},
	{name: SettingTopicPropertiesExclude, def: defaultTopicPropertiesExclude, dynamic: true, set: func(s *Settings, v string) (err error) {
		s.TopicPropertiesExclude, err = parsePatterns(v)
		return err
	}},
	{name: SettingMetadataRefreshMs, def: "30000", dynamic: true, kip: "a broker setting in KIP-1279; per mirror here",
		set: func(s *Settings, v string) (err error) {
			s.MetadataRefresh, err = parseMillis(v, 1)
			return err
		}},
	{name: SettingFetchWaitMaxMs, def: "100", kip: "1000", dynamic: true, set: func(s *Settings, v string) (err error) {
		s.FetchWaitMax, err = parseMillis(v, 0)
		return err
	}},
	{name: SettingThrottledRate, def: "0", kip: "a broker setting in KIP-1279; per mirror here (0: unlimited)", dynamic: true,
		set: func(s *Settings, v string) (err error) {
			s.ThrottledRate, err = parseInt(v, 0, 1<<50)
			return err
		}},
	{name: SettingFailedRetryInitialMs, def: "1000", kip: "a broker setting in KIP-1279; per mirror here", dynamic: true,
		set: func(s *Settings, v string) (err error) {
			s.FailedRetryInitialBackoff, err = parseMillis(v, 1)
			return err
		}},
	{name: SettingFailedRetryMaxMs, def: "300000", kip: "a broker setting in KIP-1279; per mirror here", dynamic: true,
		set: func(s *Settings, v string) (err error) {
			s.FailedRetryMaxBackoff, err = parseMillis(v, 1)
			return err
		}},
	{name: SettingFailedRetryMaxAttempts, def: "10", kip: "a broker setting in KIP-1279; per mirror here", dynamic: true,
		set: func(s *Settings, v string) error {
			n, err := parseInt(v, 0, 1<<31-1)
			s.FailedRetryMaxAttempts = int(n)
			return err
		}},
	{name: SettingACLInclude, def: "*", dynamic: true, set: func(s *Settings, v string) error {
		s.ACLInclude = splitList(v)
		_, err := parseACLRules(s.ACLInclude) // aclsync.go
		return err
	}},
	{name: SettingFailoverMode, def: string(FailoverTruncateToLSO), dynamic: true,
		kip: "abort-open-transactions is KIP-1279's (June 2026 revision); truncate-to-lso, the default, cuts open transactions at the LSO",
		set: func(s *Settings, v string) error {
			switch m := FailoverMode(strings.TrimSpace(v)); m {
			case FailoverTruncateToLSO, FailoverAbortOpenTxns:
				s.FailoverMode = m
				return nil
			}
			return fmt.Errorf("must be %s or %s", FailoverTruncateToLSO, FailoverAbortOpenTxns)
		}},
	{name: SettingTopicDeletedPolicy, def: TopicDeletedFail, dynamic: true,
		kip: "not a setting in KIP-1279, which always fails the topic (fail); stop is minibroker's earlier behaviour",
		set: func(s *Settings, v string) error {
			if v != TopicDeletedFail && v != TopicDeletedStop {
				return fmt.Errorf("want %s or %s", TopicDeletedFail, TopicDeletedStop)
			}
			s.TopicDeletedPolicy = v
			return nil
		}},
}

// SettingInfo describes one setting, for docs and tests.
type SettingInfo struct {
	Name, Default, KIPNote string
	Dynamic, Secret        bool
}

// SettingsTable lists every mirror setting, by name.
func SettingsTable() []SettingInfo {
	out := make([]SettingInfo, 0, len(settingDefs))
	for _, d := range settingDefs {
		out = append(out, SettingInfo{Name: d.name, Default: d.def, KIPNote: d.kip, Dynamic: d.dynamic, Secret: d.secret})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func settingDefOf(name string) (*settingDef, bool) {
	for i := range settingDefs {
		if settingDefs[i].name == name {
			return &settingDefs[i], true
		}
	}
	return nil, false
}

// defaultOverrides are the broker's own defaults for some settings
// (Options: tests shorten the refresh, for one), used when a mirror does
// not set them.
type defaultOverrides map[string]string

// ResolveSettings checks a mirror's settings (unknown names and bad
// values are refused with ErrBadRequest, naming the setting) and resolves
// them with the defaults.
func ResolveSettings(config map[string]string) (Settings, error) {
	return resolveSettings(config, nil)
}

func resolveSettings(config map[string]string, over defaultOverrides) (Settings, error) {
	for name := range config {
		if _, ok := settingDefOf(name); !ok {
			return Settings{}, fmt.Errorf("%w: unknown mirror setting %q (known: %s)", ErrBadRequest, name, strings.Join(settingNames(), ", "))
		}
	}
	var s Settings
	for _, d := range settingDefs {
		v, ok := config[d.name]
		if !ok {
			v = d.def
			if o, ok := over[d.name]; ok {
				v = o
			}
		}
		if err := d.set(&s, v); err != nil {
			shown := v
			if d.secret {
				shown = Hidden
			}
			return Settings{}, fmt.Errorf("%w: mirror setting %s=%q: %v", ErrBadRequest, d.name, shown, err)
		}
	}
	var err error
	if s.topicFilter, err = compilePatternFilter(s.TopicsInclude, s.TopicsExclude); err != nil {
		return Settings{}, err
	}
	if s.groupFilter, err = compilePatternFilter(s.GroupsInclude, s.GroupsExclude); err != nil {
		return Settings{}, err
	}
	if s.propsExclude, err = compilePatternFilter(s.TopicPropertiesExclude, nil); err != nil {
		return Settings{}, err
	}
	if s.FailedRetryMaxBackoff < s.FailedRetryInitialBackoff {
		return Settings{}, fmt.Errorf("%w: mirror setting %s (%d) is below %s (%d)", ErrBadRequest,
			SettingFailedRetryMaxMs, s.FailedRetryMaxBackoff.Milliseconds(), SettingFailedRetryInitialMs, s.FailedRetryInitialBackoff.Milliseconds())
	}
	return s, nil
}

func settingNames() []string {
	out := make([]string, 0, len(settingDefs))
	for _, d := range settingDefs {
		out = append(out, d.name)
	}
	sort.Strings(out)
	return out
}

// cleanSettings trims names and values; nil when empty.
func cleanSettings(in map[string]string) map[string]string {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out
}

// alterSettings applies set and reset (names back to their default) to
// old and answers the new map; a setting that is not dynamic is refused.
func alterSettings(old map[string]string, set map[string]string, reset []string) (map[string]string, error) {
	out := maps.Clone(old)
	if out == nil {
		out = map[string]string{}
	}
	check := func(name string) error {
		d, ok := settingDefOf(name)
		if !ok {
			return fmt.Errorf("%w: unknown mirror setting %q (known: %s)", ErrBadRequest, name, strings.Join(settingNames(), ", "))
		}
		if !d.dynamic {
			return fmt.Errorf("%w: mirror setting %s cannot change while the mirror exists", ErrBadRequest, name)
		}
		return nil
	}
	for _, name := range reset {
		name = strings.TrimSpace(name)
		if err := check(name); err != nil {
			return nil, err
		}
		delete(out, name)
	}
	for name, v := range cleanSettings(set) {
		if err := check(name); err != nil {
			return nil, err
		}
		out[name] = v
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// RedactSettings is a mirror's settings as shown: every setting with its
// value (the default when not set), secrets as Hidden.
func RedactSettings(config map[string]string) map[string]string {
	out := map[string]string{}
	for _, d := range settingDefs {
		v, ok := config[d.name]
		if !ok {
			v = d.def
		}
		if d.secret {
			v = Hidden
		}
		out[d.name] = v
	}
	return out
}

// splitList splits a comma-separated list, trimming each item and
// dropping empty ones; a comma nested in (), [] or {} does not split.
func splitList(v string) []string {
	var out []string
	depth, start := 0, 0
	escaped := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case escaped:
			escaped = false
		case c == '\\':
			escaped = true
		case c == '(' || c == '[' || c == '{':
			depth++
		case (c == ')' || c == ']' || c == '}') && depth > 0:
			depth--
		case c == ',' && depth == 0:
			if s := strings.TrimSpace(v[start:i]); s != "" {
				out = append(out, s)
			}
			start = i + 1
		}
	}
	if s := strings.TrimSpace(v[start:]); s != "" {
		out = append(out, s)
	}
	return out
}

// joinList is splitList's inverse (for the lists of mirrors.json before
// the settings existed).
func joinList(items []string) string { return strings.Join(items, ",") }

func parsePatterns(v string) ([]string, error) {
	items := splitList(v)
	for _, p := range items {
		if _, err := regexp.Compile("^(?:" + p + ")$"); err != nil {
			return nil, fmt.Errorf("bad regular expression %q: %v", p, err)
		}
	}
	return items, nil
}

func parseInt(v string, lo, hi int64) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("not an integer")
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("must be between %d and %d", lo, hi)
	}
	return n, nil
}

func parseMillis(v string, lo int64) (time.Duration, error) {
	n, err := parseInt(v, lo, 365*24*3600*1000)
	return time.Duration(n) * time.Millisecond, err
}

// patternFilter matches names against anchored regular expressions:
// selected when one include pattern matches and no exclude pattern does.
type patternFilter struct{ include, exclude []*regexp.Regexp }

func compilePatternFilter(include, exclude []string) (patternFilter, error) {
	var f patternFilter
	for _, lists := range []struct {
		in  []string
		out *[]*regexp.Regexp
	}{{include, &f.include}, {exclude, &f.exclude}} {
		for _, p := range lists.in {
			re, err := regexp.Compile("^(?:" + p + ")$")
			if err != nil {
				return f, fmt.Errorf("%w: pattern %q: %v", ErrBadRequest, p, err)
			}
			*lists.out = append(*lists.out, re)
		}
	}
	return f, nil
}

func (f patternFilter) matchAny(name string) bool {
	for _, re := range f.include {
		if re.MatchString(name) {
			return true
		}
	}
	return false
}

func (f patternFilter) match(name string) bool {
	if !f.matchAny(name) {
		return false
	}
	for _, re := range f.exclude {
		if re.MatchString(name) {
			return false
		}
	}
	return true
}

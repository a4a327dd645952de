package mirror

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sort"
	"strings"
)

// Topic patterns of start, stop, pause and resume (TopicsRequest's
// topic_patterns, and exclude at start): anchored regular expressions
// (Go's RE2 syntax), each matched against the whole topic name, as the
// mirror.topics.include/exclude settings are. They are resolved once,
// when the request comes: start against the topics the source has now
// (a topic created at the source later is not started; the settings
// follow new topics), stop, pause and resume against the mirror's own
// topics. A pattern never takes over what only a name may: at start, a
// topic that exists locally and no mirror knows, one another mirror
// mirrors, or one mirror.topics.exclude rules out is left alone and
// reported (TopicMatch.Skipped). Patterns that select nothing are a bad
// request, never "every topic".

// TopicMatch is how a request's topic patterns were resolved.
type TopicMatch struct {
	Patterns []string `json:"patterns"`
	Exclude  []string `json:"exclude,omitempty"`
	// Matched are the topics the patterns selected that the action
	// applies to, sorted.
	Matched []string `json:"matched"`
	// Skipped are the topics the patterns selected and the action leaves
	// alone, with why (start only).
	Skipped map[string]string `json:"skipped,omitempty"`
}

// SplitList splits a comma-separated list of topics or patterns as the
// mirror's list settings are split: items trimmed, empty ones dropped,
// and a comma inside (), [], {} or after \ not splitting (so a{1,3} is
// one pattern).
func SplitList(v string) []string { return splitList(v) }

// MatchTopics resolves patterns (minus exclude, which only start takes)
// for action on mirror name: see the comment at the top.
func (m *Manager) MatchTopics(ctx context.Context, name, action string, patterns, exclude []string) (TopicMatch, error) {
	tm := TopicMatch{Patterns: patterns, Exclude: exclude, Matched: []string{}}
	rt, err := m.runtime(name)
	if err != nil {
		return tm, err
	}
	if len(exclude) > 0 && action != "start" {
		return tm, fmt.Errorf("%w: exclude is start's", ErrBadRequest)
	}
	f, err := compilePatternFilter(patterns, exclude)
	if err != nil {
		return tm, err
	}
	if action != "start" {
		rt.mu.Lock()
		for topic := range rt.spec.Topics {
			if f.match(topic) {
				tm.Matched = append(tm.Matched, topic)
			}
		}
		rt.mu.Unlock()
		sort.Strings(tm.Matched)
		if len(tm.Matched) == 0 {
			return tm, fmt.Errorf("%w: no topic of mirror %s matches %s", ErrBadRequest, name, describePatterns(patterns, exclude))
		}
		return tm, nil
	}
	src, err := m.source(rt)
	if err != nil {
		return tm, err
	}
	answers, _, err := src.metadataOf(ctx, nil)
	if err != nil {
		return tm, err
	}
	s := rt.settings()
	ownExclude, err := compilePatternFilter(s.TopicsExclude, nil)
	if err != nil {
		return tm, err
	}
	var selected []string
	for topic, a := range answers {
		if a.err == nil && f.match(topic) {
			selected = append(selected, topic)
		}
	}
	sort.Strings(selected)
	for _, topic := range selected {
		rt.mu.Lock()
		_, known := rt.spec.Topics[topic]
		rt.mu.Unlock()
		reason, owner := "", m.ownerOf(topic)
		switch {
		case known:
		case ownExclude.matchAny(topic):
			reason = "excluded by " + SettingTopicsExclude
		case owner != "":
			reason = "mirrored by " + owner
		case m.local.Partitions(topic) != nil && !m.knobs.hooks.TakeOverLocalTopics():
			reason = "exists locally and is not mirrored: name it (not a pattern) to mirror into it"
		}
		if reason != "" {
			if tm.Skipped == nil {
				tm.Skipped = map[string]string{}
			}
			tm.Skipped[topic] = reason
			continue
		}
		tm.Matched = append(tm.Matched, topic)
	}
	if len(tm.Matched) == 0 {
		msg := fmt.Sprintf("no source topic of mirror %s to start matches %s", name, describePatterns(patterns, exclude))
		if len(tm.Skipped) > 0 {
			var parts []string
			for _, t := range slices.Sorted(maps.Keys(tm.Skipped)) {
				parts = append(parts, t+": "+tm.Skipped[t])
			}
			msg += " (left alone: " + strings.Join(parts, "; ") + ")"
		}
		return tm, fmt.Errorf("%w: %s", ErrBadRequest, msg)
	}
	return tm, nil
}

// ExcludeTopics drops the named topics exclude's patterns match (a start
// that names topics and excludes some).
func ExcludeTopics(topics, exclude []string) ([]string, error) {
	if len(exclude) == 0 {
		return topics, nil
	}
	f, err := compilePatternFilter(exclude, nil)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(slices.Clone(topics), f.matchAny), nil
}

func describePatterns(patterns, exclude []string) string {
	s := "patterns " + strings.Join(patterns, ",")
	if len(exclude) > 0 {
		s += " excluding " + strings.Join(exclude, ",")
	}
	return s
}

// planRequest is the plan endpoint's query: ?topics=a,b names topics,
// each ?topic_pattern= (repeatable: a pattern may hold a comma) is a
// pattern resolved against the mirror's topics as a stop's are, so the
// dry run covers what `mirror stop --topics` with the same patterns would
// fail over. Neither: all of the mirror's topics.
func (m *Manager) planRequest(ctx context.Context, name string, q url.Values) (Plan, error) {
	topics := splitTopics(q.Get("topics"))
	var match *TopicMatch
	if patterns := q["topic_pattern"]; len(patterns) > 0 {
		tm, err := m.MatchTopics(ctx, name, "plan", patterns, nil)
		if err != nil {
			return Plan{Mirror: name}, err
		}
		match = &tm
		for _, t := range tm.Matched {
			if !slices.Contains(topics, t) {
				topics = append(topics, t)
			}
		}
	}
	pl, err := m.Plan(ctx, name, topics)
	pl.Match = match
	return pl, err
}

package main

import (
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/minibroker/minibroker/internal/mirror"
)

// topicFlags are --topics of start, stop, pause and resume, and start's
// --exclude. Each --topics value is a comma-separated list (a comma
// inside (), [] or {} does not split, as in the mirror's list settings).
// An item made only of the characters a topic name may hold (letters,
// digits, '.', '_', '-') is a topic name, matched exactly; any other item
// is a pattern: a regular expression matched against the whole name
// (orders-.*, "orders|payments", "orders\.v[0-9]+"), resolved by the
// broker against the source's topics at start and the mirror's at stop,
// pause and resume. --exclude items are always patterns.
//
// Deviation from kafka-topics.sh, whose --topic is always a regular
// expression: there "a.b" also matches "a_b"; here a name is a name, so
// a failover never takes a topic the operator did not name.
type topicFlags struct{ topics, exclude []string }

func (f *topicFlags) register(c *cobra.Command, usage string, exclude bool) {
	c.Flags().StringArrayVar(&f.topics, "topics", nil, usage+
		"; comma-separated, repeatable; a name, or a regular expression matched against the whole topic name (orders-.*)")
	if exclude {
		c.Flags().StringArrayVar(&f.exclude, "exclude", nil,
			"regular expressions of topics --topics selects that are not started (comma-separated, repeatable)")
	}
}

// given reports whether --topics named anything.
func (f *topicFlags) given() bool { return len(f.items(f.topics)) > 0 }

func (f *topicFlags) items(values []string) []string {
	var out []string
	for _, v := range values {
		out = append(out, mirror.SplitList(v)...)
	}
	return out
}

// request is the TopicsRequest the flags make: names in Topics, patterns
// in TopicPatterns, --exclude in Exclude.
func (f *topicFlags) request() mirror.TopicsRequest {
	var req mirror.TopicsRequest
	for _, it := range f.items(f.topics) {
		if isTopicName(it) {
			req.Topics = append(req.Topics, it)
		} else {
			req.TopicPatterns = append(req.TopicPatterns, it)
		}
	}
	req.Exclude = f.items(f.exclude)
	return req
}

var topicNameChars = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)

// isTopicName reports whether s is a legal Kafka topic name.
func isTopicName(s string) bool { return topicNameChars.MatchString(s) && s != "." && s != ".." }

// matchNote is the line that says what a request's patterns selected.
func matchNote(m *mirror.TopicMatch) string {
	if m == nil {
		return ""
	}
	s := "topics matched  " + strings.Join(m.Matched, ",") + "  (patterns " + strings.Join(m.Patterns, ",")
	if len(m.Exclude) > 0 {
		s += ", excluding " + strings.Join(m.Exclude, ",")
	}
	s += ")\n"
	for _, t := range slices.Sorted(maps.Keys(m.Skipped)) {
		s += "left alone      " + t + ": " + m.Skipped[t] + "\n"
	}
	return s
}

package mirror

import (
	"slices"
	"sort"
)

// Summary is one mirror as `mirror list` shows it (GET
// /v1/mirrors?view=summary): KIP-1279's list columns, the mirror, its
// topics, the source's cluster id and bootstrap servers.
type Summary struct {
	Name string `json:"name"`
	// Topics are every topic the mirror knows, in any state, sorted.
	Topics          []string `json:"topics"`
	SourceClusterID string   `json:"source_cluster_id,omitempty"`
	Source          []string `json:"source"`
	// AutoTopics: the mirror follows mirror.topics.include (started
	// without topics), so Topics grows as the source's do.
	AutoTopics bool `json:"auto_topics,omitempty"`
}

// List summarises every mirror, sorted by name.
func (m *Manager) List() []Summary {
	rts := m.live()
	out := make([]Summary, 0, len(rts))
	for _, rt := range rts {
		rt.mu.Lock()
		s := Summary{Name: rt.spec.Name, Topics: make([]string, 0, len(rt.spec.Topics)), SourceClusterID: rt.spec.SourceClusterID,
			Source: slices.Clone(rt.spec.Source), AutoTopics: rt.spec.AutoTopics}
		for t := range rt.spec.Topics {
			s.Topics = append(s.Topics, t)
		}
		rt.mu.Unlock()
		sort.Strings(s.Topics)
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

package broker

import (
	"github.com/minibroker/minibroker/internal/coordinator"
)

// topicImage is the topic registry as the group coordinator sees it
// (names, ids, partition counts), rebuilt only when the registry changed
// since the image was taken: consumer groups resolve their subscriptions,
// regexes included, against it, and a new generation makes them check
// whether a topic they subscribe to appeared, grew or went (Kafka's
// metadata image). Called without the coordinator's lock held; takes the
// registry's read lock.
func (b *Broker) topicImage() *coordinator.TopicImage {
	gen := b.topicGen.Load()
	if im := b.topicImg.Load(); im != nil && im.Gen == gen+1 {
		return im
	}
	b.mu.RLock()
	gen = b.topicGen.Load() // changes only under b.mu
	topics := make([]coordinator.TopicInfo, 0, len(b.topics))
	for _, t := range b.topics {
		topics = append(topics, coordinator.TopicInfo{Name: t.Name, ID: t.ID, Partitions: int32(len(t.Partitions))})
	}
	b.mu.RUnlock()
	// Gen is the registry's generation + 1, so that an image is never
	// generation 0 (the coordinator's "not yet checked").
	im := coordinator.NewTopicImage(gen+1, topics)
	b.topicImg.Store(im)
	return im
}

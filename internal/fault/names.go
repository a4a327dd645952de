package fault

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ParseAPI reads an API key from its Kafka name (Produce, FindCoordinator;
// any case) or its number.
func ParseAPI(s string) (int16, error) {
	if n, err := strconv.ParseInt(s, 10, 16); err == nil {
		if kmsg.RequestForKey(int16(n)) == nil {
			return 0, fmt.Errorf("unknown API key %d", n)
		}
		return int16(n), nil
	}
	for k := int16(0); k < 200; k++ {
		if kmsg.RequestForKey(k) != nil && strings.EqualFold(kmsg.NameForKey(k), s) {
			return k, nil
		}
	}
	return 0, fmt.Errorf("unknown API %q (a Kafka API name, as Produce or Heartbeat, or its key)", s)
}

// ParseError reads a Kafka error code from its name (NOT_COORDINATOR,
// any case; NOT_LEADER_OR_FOLLOWER too, Kafka's newer name for
// NOT_LEADER_FOR_PARTITION) or its number.
func ParseError(s string) (int16, error) {
	if n, err := strconv.ParseInt(s, 10, 16); err == nil {
		return int16(n), nil
	}
	if strings.EqualFold(s, "NOT_LEADER_OR_FOLLOWER") {
		return kerr.NotLeaderForPartition.Code, nil
	}
	for code := int16(-1); code < 200; code++ {
		if e := kerr.TypedErrorForCode(code); e != nil && e != kerr.UnknownServerError && strings.EqualFold(e.Message, s) {
			return code, nil
		}
	}
	if strings.EqualFold(s, kerr.UnknownServerError.Message) {
		return kerr.UnknownServerError.Code, nil
	}
	return 0, fmt.Errorf("unknown Kafka error %q (a name, as NOT_COORDINATOR, or its code)", s)
}

package broker

import (
	"fmt"

	"github.com/minibroker/minibroker/internal/config"
	"github.com/minibroker/minibroker/internal/protocol"
)

// saslFor builds a SASL listener's mechanisms.
func (b *Broker) saslFor(spec config.ListenerSpec) (*protocol.SASL, error) {
	return nil, fmt.Errorf("security protocol %s is not supported yet", spec.Protocol)
}

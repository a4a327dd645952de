package broker

import (
	"fmt"

	"github.com/minibroker/minibroker/internal/config"
	"github.com/minibroker/minibroker/internal/protocol"
	"github.com/minibroker/minibroker/internal/security"
)

// saslFor builds a SASL listener's mechanisms: sasl.enabled.mechanisms
// (per listener), PLAIN's users from
// listener.name.<name>.plain.sasl.jaas.config, SCRAM's from the
// credentials store.
func (b *Broker) saslFor(spec config.ListenerSpec) (*protocol.SASL, error) {
	mechs := config.SplitList(b.cfg.ListenerString(spec.Name, "sasl.enabled.mechanisms"))
	if len(mechs) == 0 {
		return nil, fmt.Errorf("sasl.enabled.mechanisms is empty")
	}
	plain := security.PlainUsers{}
	if jaas, ok := b.cfg.JAAS(spec.Name, "PLAIN"); ok {
		e, err := config.ParseJAAS(jaas)
		if err != nil {
			return nil, fmt.Errorf("listener.name.%s.plain.sasl.jaas.config: %w", spec.Name, err)
		}
		plain = security.PlainUsersFromJAAS(e.Options)
	}
	srv, err := security.NewSASLServer(mechs, plain, b.scram)
	if err != nil {
		return nil, err
	}
	return &protocol.SASL{Mechanisms: mechs, Start: srv.Start}, nil
}

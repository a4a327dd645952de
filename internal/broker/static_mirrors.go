package broker

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/config"
	"github.com/minibroker/minibroker/internal/mirror"
)

// startStaticMirrors creates the mirrors declared in the config file (if
// missing) and starts their topics, retrying in the background until the
// source answers. A topic already mirrored, stopped or failed over is left
// as it is: the declaration never undoes an operator's failover. The
// declared source security settings are the file's to give: when they
// differ from a known mirror's, they replace them (so credentials are
// rotated by editing the file and restarting).
func (b *Broker) startStaticMirrors() {
	for _, sm := range b.cfg.Mirrors {
		settings, err := sm.SourceSettings()
		if err != nil {
			b.logger.Error("static mirror", zap.String("mirror", sm.Name), zap.Error(err))
			continue
		}
		err = b.mirrors.CreateWith(sm.Name, sm.Source, mirror.CreateOptions{ClientID: sm.ClientID, Config: sm.MirrorConfig,
			GroupsInclude: sm.GroupsInclude, GroupsExclude: sm.GroupsExclude, SourceConfig: settings})
		switch {
		case errors.Is(err, mirror.ErrExists):
			// Known from __mirror_state: its state is authoritative, its
			// source settings and the mirror settings it names are the
			// file's.
			if b.mirrors.SettingsDiffer(sm.Name, sm.MirrorConfig) {
				if err := b.mirrors.AlterSettings(sm.Name, sm.MirrorConfig, nil); err != nil {
					b.logger.Error("static mirror: mirror-config", zap.String("mirror", sm.Name), zap.Error(err))
				} else {
					b.logger.Info("static mirror: settings taken from the config file", zap.String("mirror", sm.Name))
				}
			}
			if b.mirrors.SourceConfigDiffers(sm.Name, settings) {
				if err := b.mirrors.AlterSourceConfig(sm.Name, settings); err != nil {
					b.logger.Error("static mirror: source config", zap.String("mirror", sm.Name), zap.Error(err))
				} else {
					b.logger.Info("static mirror: source config taken from the config file", zap.String("mirror", sm.Name))
				}
			}
			continue
		case err != nil:
			b.logger.Error("static mirror", zap.String("mirror", sm.Name), zap.Error(err))
			continue
		}
		b.bg.Add(1)
		go func(sm config.StaticMirror) {
			defer b.bg.Done()
			b.startStaticTopics(sm)
		}(sm)
	}
}

func (b *Broker) startStaticTopics(sm config.StaticMirror) {
	backoff := 200 * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		go func() { // shutdown cancels the attempt
			select {
			case <-b.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		err := b.mirrors.Start(ctx, sm.Name, sm.Topics)
		cancel()
		if err == nil {
			b.logger.Info("static mirror started", zap.String("mirror", sm.Name), zap.Strings("topics", sm.Topics))
			return
		}
		if errors.Is(err, mirror.ErrRefused) {
			// Retrying cannot help: local data to cut (start it with
			// --allow-truncate), a loop, or another cluster.
			b.logger.Error("static mirror refused; not retried", zap.String("mirror", sm.Name), zap.Error(err))
			return
		}
		b.logger.Warn("static mirror not started yet", zap.String("mirror", sm.Name), zap.Error(err), zap.Duration("retry_in", backoff))
		select {
		case <-b.stop:
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}

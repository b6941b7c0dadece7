package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/lockproxy/lockproxy/config"
	"github.com/redis/go-redis/v9"
)

// newLogger also returns its level, which a reload may change. Durations
// are written as Go writes them (1.5s, 100ms), in both formats, not as
// nanoseconds. The go-redis client lockproxy uses for its side requests
// logs through the same logger.
func newLogger(c config.LogConfig, w io.Writer) (*slog.Logger, *slog.LevelVar) {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.Level))
	lv := new(slog.LevelVar)
	lv.Set(level)
	ho := &slog.HandlerOptions{Level: lv, ReplaceAttr: readableDurations}
	var log *slog.Logger
	if c.Format == "json" {
		log = slog.New(slog.NewJSONHandler(w, ho))
	} else {
		log = slog.New(slog.NewTextHandler(w, ho))
	}
	redis.SetLogger(redisLogger{log})
	return log, lv
}

func readableDurations(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}

// redisLogger hands go-redis's log lines (a pool that cannot dial, ...) to
// slog, at WARN: go-redis logs only what went wrong.
type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.WarnContext(ctx, strings.TrimSpace(fmt.Sprintf(format, v...)), "component", "go-redis")
}

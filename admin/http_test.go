package admin

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestHandler(t *testing.T) {
	up := prometheus.NewGauge(prometheus.GaugeOpts{Name: "lockproxy_test_up"})
	up.Set(1)
	ready := "not accepting clients yet"
	h := Handler(Probes{Metrics: up,
		Healthy: func(context.Context) string { return "" },
		Ready:   func(context.Context) string { return ready }})
	get := func(path string) (int, string) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		b, _ := io.ReadAll(w.Result().Body)
		return w.Code, string(b)
	}
	for _, c := range []struct {
		path string
		code int
		body string
	}{
		{"/livez", 200, "ok\n"},
		{"/healthz", 200, "ok\n"},
		{"/readyz", 503, "not accepting clients yet\n"},
	} {
		if code, body := get(c.path); code != c.code || body != c.body {
			t.Errorf("%s: %d %q, want %d %q", c.path, code, body, c.code, c.body)
		}
	}
	ready = ""
	if code, body := get("/readyz"); code != 200 || body != "ready\n" {
		t.Errorf("/readyz once ready: %d %q", code, body)
	}
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, "lockproxy_test_up 1") || !strings.Contains(body, "go_goroutines") {
		t.Errorf("/metrics: %d, %d bytes without the test gauge or Go's collector", code, len(body))
	}
}

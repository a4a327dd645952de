package mirror_test

import (
	"net/http"
	"testing"

	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/minibrokertest"
)

// The admin API takes a mirror's settings at create ("config") and
// changes them on a running mirror (PUT …/config); describe shows every
// setting with its value or default; unknown names and bad values answer
// 400 and change nothing.
func TestAdminAPIMirrorSettings(t *testing.T) {
	src := minibrokertest.Start(t, minibrokertest.Topic("orders", 1))
	c := minibrokertest.Start(t, minibrokertest.HTTP())
	base := "http://" + c.HTTPAddr() + "/v1/mirrors"
	for _, bad := range []map[string]string{
		{"mirror.topics.includ": "x"},
		{mirror.SettingTopicsInclude: "orders("},
		{mirror.SettingMetadataRefreshMs: "soon"},
	} {
		code, out := call(t, "POST", base, map[string]any{"name": "m", "source": []string{src.Addr()}, "config": bad})
		if code != http.StatusBadRequest {
			t.Fatalf("create with %v: %d %v, want 400", bad, code, out)
		}
	}
	if code, _ := call(t, "GET", base+"/m", nil); code != http.StatusNotFound {
		t.Fatalf("a refused create made the mirror: %d", code)
	}
	code, out := call(t, "POST", base, map[string]any{"name": "m", "source": []string{src.Addr()},
		"config": map[string]string{mirror.SettingTopicsInclude: "orders.*", mirror.SettingMetadataRefreshMs: "500"}})
	if code != http.StatusOK {
		t.Fatalf("create: %d %v", code, out)
	}
	cfg := out["config"].(map[string]any)
	if cfg[mirror.SettingTopicsInclude] != "orders.*" || cfg[mirror.SettingMetadataRefreshMs] != "500" ||
		cfg[mirror.SettingTopicsExclude] != "__.*" || len(cfg) != len(mirror.SettingsTable()) {
		t.Fatalf("describe config: %v", cfg)
	}
	code, out = call(t, "PUT", base+"/m/config", map[string]any{"config": map[string]string{mirror.SettingThrottledRate: "1000000"},
		"reset": []string{mirror.SettingTopicsInclude}})
	if code != http.StatusOK {
		t.Fatalf("alter: %d %v", code, out)
	}
	cfg = out["config"].(map[string]any)
	if cfg[mirror.SettingTopicsInclude] != "" || cfg[mirror.SettingThrottledRate] != "1000000" || cfg[mirror.SettingMetadataRefreshMs] != "500" {
		t.Fatalf("after alter: %v", cfg)
	}
	for _, body := range []map[string]any{
		{"config": map[string]string{"nope": "1"}},
		{"config": map[string]string{mirror.SettingThrottledRate: "-5"}},
		{"reset": []string{"nope"}},
	} {
		if code, out := call(t, "PUT", base+"/m/config", body); code != http.StatusBadRequest {
			t.Fatalf("alter %v: %d %v, want 400", body, code, out)
		}
	}
	s, err := c.Broker().Mirrors().Settings("m")
	if err != nil {
		t.Fatal(err)
	}
	if s.ThrottledRate != 1000000 || len(s.TopicsInclude) != 0 {
		t.Fatalf("settings after refused alters: %+v", s)
	}
}

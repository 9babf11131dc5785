package policy_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/toolguard/toolguard/policy"
)

func TestDefaults(t *testing.T) {
	c, err := policy.Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := policy.Config{
		ListenAddr:             ":8080",
		UpstreamURL:            "https://api.openai.com/v1",
		Mode:                   policy.ModeRepair,
		MaxReasks:              2,
		OnFailure:              policy.FailError,
		ResponseFormat:         policy.ModeRepair,
		TextCalls:              policy.TextCallsMarked,
		SchemaRepair:           true,
		MaxConcurrentUpstream:  1024,
		BreakerFailures:        5,
		BreakerCooldown:        30 * time.Second,
		UpstreamConnectTimeout: 10 * time.Second,
		UpstreamHeaderTimeout:  5 * time.Minute,
		UpstreamTimeout:        10 * time.Minute,
		MaxBodyBytes:           32 << 20,
		MaxResponseBytes:       32 << 20,
		ReadTimeout:            time.Minute,
		WriteTimeout:           30 * time.Minute,
		IdleTimeout:            2 * time.Minute,
		ShutdownTimeout:        30 * time.Second,
		DrainDelay:             5 * time.Second,
		SchemaCacheSize:        1024,
		SchemaCacheBytes:       256 << 20,
		LogFormat:              "json",
		LogLevel:               "info",
		LogArguments:           true,
		LogFlushInterval:       50 * time.Millisecond,
		GCReserveBytes:         4 << 20,
	}
	if diff := cmp.Diff(c, want); diff != "" {
		t.Errorf("defaults (-got +want):\n%s", diff)
	}
}

func TestLoadReportsEveryBadValue(t *testing.T) {
	_, err := policy.Load([]string{
		"TOOLGUARD_MODE=fix",
		"TOOLGUARD_MAX_REASKS=-1",
		"TOOLGUARD_ON_FAILURE=ignore",
		"TOOLGUARD_UPSTREAM_URL=ftp://example.com",
		"TOOLGUARD_UPSTREAM_TIMEOUT=soon",
		"TOOLGUARD_LOG_LEVEL=loud",
		"TOOLGUARD_MAX_BODY_BYTES=9223372036854775807",
		"TOOLGUARD_MAX_RESPONSE_BYTES=1099511627777",
	})
	if err == nil {
		t.Fatal("Load accepted bad values")
	}
	for _, name := range []string{
		"TOOLGUARD_MODE", "TOOLGUARD_MAX_REASKS", "TOOLGUARD_ON_FAILURE",
		"TOOLGUARD_UPSTREAM_URL", "TOOLGUARD_UPSTREAM_TIMEOUT", "TOOLGUARD_LOG_LEVEL",
		"TOOLGUARD_MAX_BODY_BYTES", "TOOLGUARD_MAX_RESPONSE_BYTES",
	} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error does not name %s:\n%v", name, err)
		}
	}
}

func TestLoadAcceptsGoodValues(t *testing.T) {
	c, err := policy.Load([]string{
		"TOOLGUARD_MODE=validate",
		"TOOLGUARD_MAX_REASKS=0",
		"TOOLGUARD_ON_FAILURE=drop",
		"TOOLGUARD_UPSTREAM_URL=http://127.0.0.1:9999/v1",
		"TOOLGUARD_MAX_BODY_BYTES=1099511627776",
		"TOOLGUARD_MAX_RESPONSE_BYTES=1",
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.Mode != policy.ModeValidate || c.MaxReasks != 0 || c.OnFailure != policy.FailDrop || c.UpstreamURL != "http://127.0.0.1:9999/v1" {
		t.Errorf("got %+v", c)
	}
}

// TestGCReserveRange: the reserve is 0 (none) to 1 GiB, both ends taken,
// one byte past either refused with the variable named.
func TestGCReserveRange(t *testing.T) {
	for _, v := range []string{"0", "1073741824"} {
		if _, err := policy.Load([]string{"TOOLGUARD_GC_RESERVE_BYTES=" + v}); err != nil {
			t.Errorf("%s refused: %v", v, err)
		}
	}
	for _, v := range []string{"-1", "1073741825", "4MiB"} {
		_, err := policy.Load([]string{"TOOLGUARD_GC_RESERVE_BYTES=" + v})
		if err == nil || !strings.Contains(err.Error(), "TOOLGUARD_GC_RESERVE_BYTES") {
			t.Errorf("%s: got %v, want an error naming TOOLGUARD_GC_RESERVE_BYTES", v, err)
		}
	}
}

func TestUnknownVariables(t *testing.T) {
	got := policy.Unknown([]string{"TOOLGUARD_MODE=repair", "TOOLGUARD_UPSTREM_URL=x", "TOOLGUARD_WHATEVER_THIS_IS=1", "PATH=/bin", "toolguard_mode=off"})
	want := []string{
		"TOOLGUARD_UPSTREM_URL is not a toolguard variable and is ignored; did you mean TOOLGUARD_UPSTREAM_URL?",
		"TOOLGUARD_WHATEVER_THIS_IS is not a toolguard variable and is ignored",
		"toolguard_mode is not a toolguard variable and is ignored; did you mean TOOLGUARD_MODE?",
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("(-got +want):\n%s", diff)
	}
}

// TestUnknownVariablesSuggestions: the suggestion is the variable meant,
// whether a letter slipped or a word was left out.
func TestUnknownVariablesSuggestions(t *testing.T) {
	tests := []struct{ give, want string }{
		{give: "TOOLGUARD_MAX_REASK", want: "TOOLGUARD_MAX_REASKS"},
		{give: "TOOLGUARD_UPSTREAM_KEY", want: "TOOLGUARD_UPSTREAM_API_KEY"},
		{give: "TOOLGUARD_API_KEY", want: "TOOLGUARD_API_KEYS"},
		{give: "TOOLGUARD_KEYS", want: "TOOLGUARD_API_KEYS"},
		{give: "TOOLGUARD_LOGLEVEL", want: "TOOLGUARD_LOG_LEVEL"},
		{give: "TOOLGUARD_LISTEN_ADDRESS", want: "TOOLGUARD_LISTEN_ADDR"},
		{give: "TOOLGUARD_FALLBACK_URL", want: "TOOLGUARD_FALLBACK_UPSTREAM_URL"},
		{give: "TOOLGUARD_METRICS_PORT", want: "TOOLGUARD_METRICS_ADDR"},
		{give: "TOOLGUARD_TOOL_POLICY", want: "TOOLGUARD_TOOL_POLICIES"},
		{give: "TOOLGUARD_NOTHING_LIKE_IT", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			got := policy.Unknown([]string{tt.give + "=x"})
			want := tt.give + " is not a toolguard variable and is ignored"
			if tt.want != "" {
				want += "; did you mean " + tt.want + "?"
			}
			if len(got) != 1 || got[0] != want {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
}

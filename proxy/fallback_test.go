package proxy_test

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/policy"
)

// The models of the fallback tests: the weak one never mends its call, the
// strong one gets it right. Each answers under a dated name, as providers do.
const (
	weakModel   = "gpt-test"
	strongModel = "gpt-strong"
)

// modelReply answers a non-streamed request as the model it names would: a
// valid click for the strong model, an empty one for any other.
func modelReply(body []byte) string {
	usage := `{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}`
	model := gjson.GetBytes(body, "model").String()
	args := `"{}"`
	if model == strongModel {
		args = `"{\"selector\":\"#login\"}"`
	}
	return strings.Replace(toolReply(usage, clickCall("call_"+model, args)), `"model":"gpt-test-2025"`, `"model":"`+model+`-2025"`, 1)
}

// answerAsModel makes up answer as the model each request names.
func answerAsModel(up *fakeUpstream) {
	up.handle = func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, modelReply(up.requests()[n].Body))
	}
}

func modelsSeen(reqs []received) []string {
	var out []string
	for _, r := range reqs {
		out = append(out, gjson.GetBytes(r.Body, "model").String())
	}
	return out
}

// TestFallbackModel checks, through real HTTP, that the last re-ask names
// the fallback model, that the client gets the strong model's valid call
// within the re-ask bound, and that without a fallback (or where a policy
// forbids it) the client gets the SPEC's 400.
func TestFallbackModel(t *testing.T) {
	tests := []struct {
		name    string
		env     []string
		tools   string
		status  int
		outcome string
		models  []string // the model of each upstream request, in order
	}{
		{"no-fallback", nil, clickTools, 400, "failed", []string{weakModel, weakModel, weakModel}},
		{"fallback-on-the-last-reask", []string{"TOOLGUARD_FALLBACK_MODEL=" + strongModel}, clickTools, 200, "reasked", []string{weakModel, weakModel, strongModel}},
		{"one-reask-is-the-fallback", []string{"TOOLGUARD_FALLBACK_MODEL=" + strongModel, "TOOLGUARD_MAX_REASKS=1"}, clickTools, 200, "reasked", []string{weakModel, strongModel}},
		{"no-reask-no-fallback", []string{"TOOLGUARD_FALLBACK_MODEL=" + strongModel, "TOOLGUARD_MAX_REASKS=0"}, clickTools, 400, "failed", []string{weakModel}},
		{"tool-policy-turns-it-off", []string{"TOOLGUARD_FALLBACK_MODEL=" + strongModel, "TOOLGUARD_TOOL_POLICIES=click:fallback=off"}, clickTools, 400, "failed", []string{weakModel, weakModel, weakModel}},
		{"tool-policy-names-the-model", []string{"TOOLGUARD_TOOL_POLICIES=click:fallback_model=" + strongModel}, clickTools, 200, "reasked", []string{weakModel, weakModel, strongModel}},
		{"tool-budget-decides-the-last", []string{"TOOLGUARD_FALLBACK_MODEL=" + strongModel, "TOOLGUARD_MAX_REASKS=3", "TOOLGUARD_TOOL_POLICIES=click:max_reasks=1"}, clickTools, 200, "reasked", []string{weakModel, strongModel}},
		{"tools-naming-different-models-get-none", []string{"TOOLGUARD_FALLBACK_MODEL=" + strongModel, "TOOLGUARD_TOOL_POLICIES=type:fallback_model=gpt-other"}, typeTools, 400, "failed", []string{weakModel, weakModel, weakModel}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t)
			answerAsModel(up)
			if tt.tools == typeTools {
				// Both tools fail on the weak model; the strong one is never asked.
				up.handle = func(w http.ResponseWriter, r *http.Request, _ int) {
					w.Header().Set("Content-Type", "application/json")
					io.WriteString(w, toolReply(`{"total_tokens":1}`, clickCall("call_1", `"{}"`), typeCall("call_2", `"{}"`)))
				}
			}
			srv := guardEnv(t, up, tt.env)
			req := `{"model":"` + weakModel + `","messages":[{"role":"user","content":"Click login."}],"tools":` + tt.tools + `}`
			resp, body := post(t, srv, "/v1/chat/completions", req)
			if resp.StatusCode != tt.status || header(resp, "X-Toolguard-Outcome") != tt.outcome {
				t.Fatalf("status %d outcome %q, want %d %q: %s", resp.StatusCode, header(resp, "X-Toolguard-Outcome"), tt.status, tt.outcome, body)
			}
			if diff := cmp.Diff(modelsSeen(up.requests()), tt.models); diff != "" {
				t.Errorf("models sent upstream (-got +want):\n%s", diff)
			}
			if tt.status == 400 {
				checkOpenAIError(t, resp, body, 400, "tool_call_invalid")
				return
			}
			got := mustJSON(t, body)
			if args := got.Get("choices.0.message.tool_calls.0.function.arguments").String(); args != `{"selector":"#login"}` {
				t.Errorf("arguments %s, want the strong model's", args)
			}
			if m := got.Get("model").String(); m != strongModel+"-2025" {
				t.Errorf("model %q, want the one that answered last", m)
			}
			if n := got.Get("usage.total_tokens").Int(); n != int64(2*len(tt.models)) {
				t.Errorf("usage.total_tokens %d, want the sum over %d attempts", n, len(tt.models))
			}
			if r := header(resp, "X-Toolguard-Reasks"); r != strconv.Itoa(len(tt.models)-1) {
				t.Errorf("X-Toolguard-Reasks %s, want %d", r, len(tt.models)-1)
			}
		})
	}
}

// TestFallbackUpstream checks that a separate fallback endpoint receives the
// last re-ask and nothing else, with the credentials the README promises.
func TestFallbackUpstream(t *testing.T) {
	tests := []struct {
		name       string
		change     func(*policy.Config)
		clientAuth string
		primary    string // Authorization the primary upstream gets
		fallback   string // Authorization the fallback endpoint gets
		apiKey     string // the client's Api-Key header, as the fallback gets it
	}{
		{"its-own-key", func(c *policy.Config) { c.UpstreamAPIKey, c.FallbackUpstreamAPIKey = "sk-primary", "sk-fallback" }, "Bearer sk-client", "Bearer sk-primary", "Bearer sk-fallback", ""},
		{"upstream-key-never-leaves-its-host", func(c *policy.Config) { c.UpstreamAPIKey = "sk-primary" }, "Bearer sk-client", "Bearer sk-primary", "", ""},
		{"client-key-when-no-key-is-configured", nil, "Bearer sk-client", "Bearer sk-client", "Bearer sk-client", "azure-client-key"},
		{"client-key-of-toolguard-never-leaves", func(c *policy.Config) { c.APIKeys = []string{"tg-key"} }, "Bearer tg-key", "", "", "azure-client-key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			primary := newUpstream(t)
			answerAsModel(primary)
			fb := newUpstream(t)
			answerAsModel(fb)
			srv, _ := guard(t, primary, func(c *policy.Config) {
				c.FallbackModel = strongModel
				c.FallbackUpstreamURL = fb.URL + "/v1/"
				if tt.change != nil {
					tt.change(c)
				}
			})
			resp, body := do(t, t.Context(), srv, http.MethodPost, "/v1/chat/completions", clickRequest(""),
				http.Header{"Authorization": {tt.clientAuth}, "Api-Key": {"azure-client-key"}})
			if resp.StatusCode != 200 || header(resp, "X-Toolguard-Outcome") != "reasked" {
				t.Fatalf("status %d outcome %q: %s", resp.StatusCode, header(resp, "X-Toolguard-Outcome"), body)
			}
			if diff := cmp.Diff(modelsSeen(primary.requests()), []string{weakModel, weakModel}); diff != "" {
				t.Errorf("primary saw (-got +want):\n%s", diff)
			}
			fbReqs := fb.requests()
			if diff := cmp.Diff(modelsSeen(fbReqs), []string{strongModel}); diff != "" {
				t.Fatalf("fallback saw (-got +want):\n%s", diff)
			}
			for _, r := range primary.requests() {
				if got := r.Header.Get("Authorization"); got != tt.primary {
					t.Errorf("primary got Authorization %q, want %q", got, tt.primary)
				}
			}
			got := fbReqs[0]
			if got.Path != "/v1/chat/completions" || got.Method != http.MethodPost {
				t.Errorf("fallback got %s %s", got.Method, got.Path)
			}
			if a := got.Header.Get("Authorization"); a != tt.fallback {
				t.Errorf("fallback got Authorization %q, want %q", a, tt.fallback)
			}
			if k := got.Header.Get("Api-Key"); k != tt.apiKey {
				t.Errorf("fallback got Api-Key %q, want %q", k, tt.apiKey)
			}
			// The fallback re-ask is the conversation with the weak model's
			// attempts and their errors, not the bare request.
			if n := len(gjson.GetBytes(got.Body, "messages").Array()); n <= 1 {
				t.Errorf("fallback re-ask has %d messages", n)
			}
		})
	}
}

// TestFallbackKeyIsRedacted checks that a fallback endpoint echoing its key
// in an error reaches neither the client nor the log.
func TestFallbackKeyIsRedacted(t *testing.T) {
	const key = "sk-fallback-secret-1234"
	primary := newUpstream(t)
	answerAsModel(primary)
	fb := newUpstream(t, reply{Status: 401, Body: `{"error":{"message":"Incorrect API key provided: ` + key + `","type":"invalid_request_error"}}`})
	srv, logs := guard(t, primary, func(c *policy.Config) {
		c.FallbackUpstreamURL, c.FallbackUpstreamAPIKey = fb.URL+"/v1", key
	})
	resp, body := post(t, srv, "/v1/chat/completions", clickRequest(""))
	checkOpenAIError(t, resp, body, 400, "tool_call_invalid")
	if !strings.Contains(string(body), "status 401") {
		t.Errorf("the message does not say why re-asking stopped: %s", body)
	}
	for what, text := range map[string]string{"response": string(body), "log": logs.String()} {
		if strings.Contains(text, key) {
			t.Errorf("the fallback key is in the %s", what)
		}
	}
}

// TestFallbackStreamed checks the same through a streamed request: the
// re-asks are not streamed, the strong model's call is released whole, and
// the chunk that carries it names the model that wrote it.
func TestFallbackStreamed(t *testing.T) {
	up := newUpstream(t)
	answerAsModel(up)
	asModel := up.handle
	up.handle = func(w http.ResponseWriter, r *http.Request, n int) {
		if !gjson.GetBytes(up.requests()[n].Body, "stream").Bool() {
			asModel(w, r, n)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, streamCall(0, 0, "call_1", `{}`)+chunk(finish(0, "tool_calls"))+usageChunk(2)+done)
	}
	srv, _ := guard(t, up, func(c *policy.Config) { c.FallbackModel = strongModel })
	resp, body := post(t, srv, "/v1/chat/completions", streamRequest(`,"stream_options":{"include_usage":true}`))
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	a := assemble(t, body)
	if diff := cmp.Diff(a.Calls[0], []string{"call_" + strongModel + ` click {"selector":"#login"}`}); diff != "" {
		t.Errorf("calls (-got +want):\n%s", diff)
	}
	if a.Comment != ": toolguard outcome=reasked reasks=2" || a.Error != "" || !a.Done {
		t.Errorf("comment %q error %q done %v", a.Comment, a.Error, a.Done)
	}
	if n := gjson.Get(a.Usage, "total_tokens").Int(); n != 6 {
		t.Errorf("usage.total_tokens %d, want 2 for each of 3 attempts", n)
	}
	if diff := cmp.Diff(modelsSeen(up.requests()), []string{weakModel, weakModel, strongModel}); diff != "" {
		t.Errorf("models sent upstream (-got +want):\n%s", diff)
	}
	// The chunk carrying the call names the fallback's model; the others
	// keep the stream's.
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || !gjson.Valid(data) {
			continue
		}
		want := weakModel
		if gjson.Get(data, "choices.0.delta.tool_calls").Exists() {
			want = strongModel + "-2025"
		}
		if m := gjson.Get(data, "model").String(); m != want {
			t.Errorf("chunk names model %q, want %q: %s", m, want, data)
		}
	}
}

package e2e

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// nodeClient runs the Node script node/<script>, which makes its assertions
// itself, prints its result as one JSON line and exits non-zero when they fail.
func nodeClient(name, script string) client {
	return client{
		name: name,
		skip: nodeMissing,
		run: func(ctx context.Context, baseURL string, sc scenario, stream bool) result {
			expect := "tool"
			if sc.wantError {
				expect = "error"
			}
			cmd := exec.CommandContext(ctx, "node", script)
			cmd.Dir = "node"
			cmd.Env = append(os.Environ(),
				"E2E_BASE_URL="+baseURL,
				"E2E_SCENARIO="+sc.name,
				"E2E_STREAM="+strconv.FormatBool(stream),
				"E2E_EXPECT="+expect,
				"E2E_WANT_ARGS="+wantArgs,
				"E2E_WANT_ERROR="+cmp.Or(sc.wantMessage, toolguardMessage),
				"E2E_WANT_STATUS="+strconv.Itoa(cmp.Or(sc.wantStatus, 400)),
			)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			out := "stdout:\n" + stdout.String() + "stderr:\n" + stderr.String()
			var res result
			lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
			if jerr := json.Unmarshal([]byte(lines[len(lines)-1]), &res); jerr != nil {
				return result{Observed: "the script printed no result", Detail: "node: " + errString(err), Output: out}
			}
			res.Output = out
			if res.OK && err != nil {
				res.OK, res.Detail = false, "node: "+err.Error()
			}
			return res
		},
	}
}

// nodeMissing says why the Node clients cannot run here, or "".
func nodeMissing() string {
	if _, err := exec.LookPath("node"); err != nil {
		return "node is not on PATH: the Node clients need Node 20 or later"
	}
	if _, err := os.Stat(filepath.Join("node", "node_modules")); err != nil {
		return "e2e/node/node_modules is missing: run (cd e2e/node && npm ci)"
	}
	return ""
}

func errString(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

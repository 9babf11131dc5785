package messages

import (
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/proxy/internal/wire"
)

// Reask is the request of a stateless re-ask for the turn's invalid calls:
// the client's request, made non-streaming, its messages followed by those
// the re-asks so far have added, an assistant turn with the model's last
// content (each tool_use with an object input) and a user turn with a
// tool_result for every tool_use of it (is_error and the errors for an
// invalid one, that it was kept for a valid one: the API wants a result
// for every tool_use) and the instruction; and, if the policy says so
// (ladder.Exchange.ForceTool), a forced tool_choice and the fallback's
// model. Every other field (system, tools, thinking...) is kept as the
// client sent it.
func (q *Request) Reask(x *ladder.Exchange, tt *ladder.Turn, attempt int, model string) ([]byte, error) {
	t := turnOf(tt)
	added, err := feedback(tt, attempt)
	if err != nil {
		return nil, err
	}
	msgs := append(t.history[:len(t.history):len(t.history)], added...)
	body := q.Body
	if gjson.GetBytes(body, "stream").Exists() {
		if body, err = wire.Delete(body, "stream"); err != nil {
			return nil, err
		}
	}
	var all []string
	gjson.GetBytes(body, "messages").ForEach(func(_, m gjson.Result) bool {
		all = append(all, m.Raw)
		return true
	})
	all = append(all, msgs...)
	if body, err = wire.Patch(body, "messages", "["+strings.Join(all, ",")+"]"); err != nil {
		return nil, err
	}
	// With extended thinking on, the API refuses a forced tool.
	if name, ok := x.ForceTool(tt); ok && gjson.GetBytes(body, "thinking.type").Str != "enabled" {
		if body, err = wire.Patch(body, "tool_choice", `{"type":"tool","name":`+wire.Quote(name)+`}`); err != nil {
			return nil, err
		}
	}
	if model != "" {
		if body, err = wire.Patch(body, "model", wire.Quote(model)); err != nil {
			return nil, err
		}
	}
	t.pending = msgs
	return body, nil
}

// feedback builds the messages added for one re-ask.
func feedback(tt *ladder.Turn, attempt int) ([]string, error) {
	t := turnOf(tt)
	if len(tt.Last) == 0 {
		// The model's last answer had no calls: remind it of the ones that
		// are still invalid.
		return []string{userTurn(textBlock(ladder.Reminder(tt)))}, nil
	}
	// The model's content, with the ids its tool_use blocks are answered
	// by and an object for every input.
	var blocks, results []string
	k := 0
	var err error
	room := ladder.MaxFeedbackBytes
	gjson.Parse(t.last).ForEach(func(_, b gjson.Result) bool {
		if b.Get("type").Str != "tool_use" {
			if b.Get("type").Str == "text" && b.Get("text").Str == "" {
				return true // the API refuses an empty text block
			}
			blocks = append(blocks, b.Raw)
			return true
		}
		if k >= len(tt.Last) {
			err = fmt.Errorf("the turn's content holds more tool_use blocks than calls")
			return false
		}
		c := tt.Last[k]
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("toolu_toolguard_%d_%d", attempt, k)
		}
		k++
		input := "{}"
		if a := gjson.ParseBytes(c.Args); gjson.ValidBytes(c.Args) && a.IsObject() {
			input = a.Raw
		}
		blocks = append(blocks, `{"type":"tool_use","id":`+wire.Quote(id)+`,"name":`+wire.Quote(c.Name)+`,"input":`+input+`}`)
		text := ladder.Feedback(c, room)
		room -= len(text)
		result := `{"type":"tool_result","tool_use_id":` + wire.Quote(id) + `,"content":` + wire.Quote(text)
		if !c.Valid() {
			result += `,"is_error":true`
		}
		results = append(results, result+`}`)
		return true
	})
	if err != nil {
		return nil, err
	}
	results = append(results, textBlock(ladder.ReaskInstruction))
	return []string{
		`{"role":"assistant","content":[` + strings.Join(blocks, ",") + `]}`,
		userTurn(strings.Join(results, ",")),
	}, nil
}

func textBlock(text string) string { return `{"type":"text","text":` + wire.Quote(text) + `}` }

func userTurn(blocks string) string { return `{"role":"user","content":[` + blocks + `]}` }

// Answer reads the reply to a re-ask of the turn: its calls, and its
// content for the next re-ask.
func (q *Request) Answer(tt *ladder.Turn, reply []byte) (ladder.Answer, error) {
	if err := wire.Strict(reply, replyShape); err != nil {
		return ladder.Answer{}, fmt.Errorf("the upstream's reply cannot be read unambiguously: %w", err)
	}
	resp := gjson.ParseBytes(reply)
	sent, err := sentOf(resp.Get("content"))
	if err != nil {
		return ladder.Answer{}, fmt.Errorf("the upstream's reply is malformed: %w", err)
	}
	t := turnOf(tt)
	t.history, t.pending = t.pending, nil
	t.last = resp.Get("content").Raw
	return ladder.Answer{Sent: sent, CutOff: cutOff(resp)}, nil
}

package responses

import (
	"github.com/tidwall/gjson"
	"github.com/toolguard/toolguard/proxy/internal/ladder"
	"github.com/toolguard/toolguard/repair"
)

// MendHistory mends the form of the function_call items of the input a
// client sends back (see ladder.HistoryMender). It returns the body
// unchanged, byte for byte, when nothing needed mending.
func MendHistory(body []byte) ([]byte, []repair.Edit, error) {
	m := ladder.NewHistoryMender()
	gjson.GetBytes(body, "input").ForEach(func(_, item gjson.Result) bool {
		if item.IsObject() && item.Get("type").String() == "function_call" {
			m.Call(item.Get("arguments"), item)
		}
		return true
	})
	return m.Body(body)
}

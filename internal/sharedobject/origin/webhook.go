package origin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/relaymesh/relaymesh/internal/rpc"
)

// MaxWebhookBody bounds a webhook's answer.
const MaxWebhookBody = 1 << 20

// webhook posts the call to url and returns the decoded JSON answer.
func (s *Server) webhook(ctx context.Context, url string, c Call) (any, error) {
	args, err := rpc.ToJSONList(c.Args)
	if err != nil {
		return nil, fmt.Errorf("arguments: %w", err)
	}
	c.Args = args
	body, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("arguments: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.WebhookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("webhook: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.cfg.HTTPClient.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("webhook did not answer within %s", s.cfg.WebhookTimeout)
		}
		return nil, fmt.Errorf("webhook unreachable: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		return nil, fmt.Errorf("webhook answered %d: %s", resp.StatusCode, bytes.TrimSpace(snippet))
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxWebhookBody+1))
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("webhook did not answer within %s", s.cfg.WebhookTimeout)
		}
		return nil, fmt.Errorf("webhook: %w", err)
	}
	if len(b) > MaxWebhookBody {
		return nil, fmt.Errorf("webhook answer over %d bytes", MaxWebhookBody)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil
	}
	v, err := rpc.ParseJSON(b)
	if err != nil {
		return nil, fmt.Errorf("webhook answer: %w", err)
	}
	return v, nil
}

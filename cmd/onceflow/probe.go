package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// ProbeCmd is `onceflow probe`: a container health check for images
// without a shell or curl (the distroless image runs it against its own
// /healthz).
type ProbeCmd struct {
	URL     string        `arg:"" help:"URL to GET, e.g. http://127.0.0.1:9100/healthz."`
	Timeout time.Duration `name:"timeout" default:"3s" help:"Give up after this long."`
}

// Run exits 0 when the URL answers 2xx, 1 when it answers otherwise (the
// body is printed), 2 when it cannot be reached.
func (c *ProbeCmd) Run(env *Env) error {
	ctx, cancel := context.WithTimeout(env.Ctx, c.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL, nil)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode/100 != 2 {
		reason := strings.TrimSpace(string(body))
		env.Summary(fmt.Sprintf("%s: %s: %s", c.URL, resp.Status, reason), "url", c.URL, "status", resp.StatusCode, "body", reason)
		return errCheckFailed
	}
	fmt.Fprintf(env.Stdout, "%s", body)
	return nil
}

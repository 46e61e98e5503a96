//go:build !darwin

package main

import (
	"log/slog"

	"github.com/ruvllm/ruvllm/app/menubar"
)

func run(*slog.Logger) error { return menubar.ErrUnsupported }

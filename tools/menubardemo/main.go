// Command menubardemo puts the ruvllm status item in the macOS menu bar
// without the desktop app, for checking app/menubar by hand on a Mac:
//
//	go run ./tools/menubardemo
//
// A click on the item toggles the Dock icon (as the app's menu-bar mode
// does) and counts the clicks in the "Model:" line; the right-click menu's
// Quit ends the demo. On other systems it says so and exits.
package main

import (
	"fmt"
	"log/slog"
	"os"
)

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if err := run(log); err != nil {
		fmt.Fprintln(os.Stderr, "menubardemo:", err)
		os.Exit(1)
	}
}

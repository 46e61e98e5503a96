package main

import (
	"fmt"
	"log/slog"
	"os"
	"text/tabwriter"

	"github.com/ruvllm/ruvllm/daemon/service"
	"github.com/spf13/cobra"
)

func newServiceCmd() *cobra.Command {
	var o service.Options
	cmd := &cobra.Command{
		Use:   "service",
		Short: "Install, remove or inspect ruvllmd as a per-user service (systemd or launchd)",
	}
	cmd.PersistentFlags().StringVar(&o.SocketPath, "socket", "", "socket the service manager listens on (default: the standard path)")
	logger := func() *slog.Logger { return slog.New(slog.NewTextHandler(os.Stderr, nil)) }

	install := &cobra.Command{
		Use:   "install",
		Short: "Install and start the service; the daemon starts on the first connection",
		Args:  exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Logger = logger()
			return service.Install(cmd.Context(), o)
		},
	}
	install.Flags().StringVar(&o.Executable, "exec", "", "daemon binary (default: ruvllmd beside ruvllm, else \"ruvllm daemon\")")
	install.Flags().BoolVar(&o.RunAtLoad, "run-at-load", false, "macOS: start at login instead of on first connection")

	uninstall := &cobra.Command{
		Use:   "uninstall",
		Short: "Stop and remove the service",
		Args:  exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Logger = logger()
			return service.Uninstall(cmd.Context(), o)
		},
	}
	status := &cobra.Command{
		Use:   "status",
		Short: "Show the service's units and their states",
		Args:  exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Logger = logger()
			st, err := service.Status(cmd.Context(), o)
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintf(w, "MANAGER\tUNIT\tINSTALLED\tFILE STATE\tACTIVE\tPATH\n")
			for _, u := range st.Units {
				fmt.Fprintf(w, "%s\t%s\t%v\t%s\t%s\t%s\n", st.Manager, u.Name, u.Installed, u.FileState, u.ActiveState, u.Path)
			}
			return w.Flush()
		},
	}
	cmd.AddCommand(install, uninstall, status)
	return cmd
}

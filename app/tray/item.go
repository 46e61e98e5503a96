package tray

import (
	"fmt"

	"github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/introspect"
	"github.com/godbus/dbus/v5/prop"
)

// toolTip is the SNI ToolTip property, D-Bus signature (sa(iiay)ss).
type toolTip struct {
	IconName    string
	IconPixmap  []pixmap
	Title       string
	Description string
}

// item is the object exported at ItemPath; its methods are the
// org.kde.StatusNotifierItem methods hosts call on user input.
type item struct{ t *Tray }

// Activate is a primary click on the icon: toggle the window.
func (it item) Activate(x, y int32) *dbus.Error {
	it.t.log.Debug("tray activated", "x", x, "y", y)
	it.t.callback(it.t.opts.OnToggle)
	return nil
}

// SecondaryActivate is a middle click; ruvllm gives it no meaning.
func (it item) SecondaryActivate(x, y int32) *dbus.Error { return nil }

// ContextMenu asks the item to show its own menu, which hosts only do when
// they cannot render the dbusmenu at Menu themselves; ruvllm has no
// toolkit-side menu, so it logs the request.
func (it item) ContextMenu(x, y int32) *dbus.Error {
	it.t.log.Debug("tray host asked for a client-side context menu; only the dbusmenu is available", "x", x, "y", y)
	return nil
}

// Scroll is a mouse-wheel event over the icon; ruvllm gives it no meaning.
func (it item) Scroll(delta int32, orientation string) *dbus.Error { return nil }

// toolTipLocked builds the tooltip from the title and model; t.mu held.
func (t *Tray) toolTipLocked() toolTip {
	return toolTip{Title: t.title, Description: t.menu.modelLabel()}
}

// export puts the item and the menu, with their properties and
// introspection data, on the connection.
func (t *Tray) export(pixmaps []pixmap) error {
	it := item{t}
	if err := t.conn.Export(it, ItemPath, ItemInterface); err != nil {
		return fmt.Errorf("tray: export item: %w", err)
	}
	none := []pixmap{}
	ro := func(v any) *prop.Prop { return &prop.Prop{Value: v, Emit: prop.EmitFalse} }
	dyn := func(v any) *prop.Prop { return &prop.Prop{Value: v, Emit: prop.EmitTrue} }
	var err error
	t.itemProp, err = prop.Export(t.conn, ItemPath, prop.Map{ItemInterface: {
		"Category":            ro("ApplicationStatus"),
		"Id":                  ro(t.opts.ID),
		"Title":               dyn(t.title),
		"Status":              dyn(string(t.status)),
		"WindowId":            ro(int32(0)),
		"IconName":            dyn(t.opts.IconName),
		"IconPixmap":          dyn(pixmaps),
		"IconThemePath":       ro(""),
		"OverlayIconName":     ro(""),
		"OverlayIconPixmap":   ro(none),
		"AttentionIconName":   ro(""),
		"AttentionIconPixmap": ro(none),
		"AttentionMovieName":  ro(""),
		"ToolTip":             dyn(t.toolTipLocked()),
		"ItemIsMenu":          ro(false),
		"Menu":                ro(MenuPath),
	}})
	if err != nil {
		return fmt.Errorf("tray: export item properties: %w", err)
	}
	itemNode := &introspect.Node{
		Name: string(ItemPath),
		Interfaces: []introspect.Interface{
			introspect.IntrospectData,
			prop.IntrospectData,
			{
				Name:       ItemInterface,
				Methods:    introspect.Methods(it),
				Properties: t.itemProp.Introspection(ItemInterface),
				Signals: []introspect.Signal{
					{Name: "NewTitle"},
					{Name: "NewIcon"},
					{Name: "NewAttentionIcon"},
					{Name: "NewOverlayIcon"},
					{Name: "NewToolTip"},
					{Name: "NewStatus", Args: []introspect.Arg{{Name: "status", Type: "s"}}},
				},
			},
		},
	}
	if err := t.conn.Export(introspect.NewIntrospectable(itemNode), ItemPath, "org.freedesktop.DBus.Introspectable"); err != nil {
		return fmt.Errorf("tray: export item introspection: %w", err)
	}

	m := t.menu
	if err := t.conn.Export(m, MenuPath, MenuInterface); err != nil {
		return fmt.Errorf("tray: export menu: %w", err)
	}
	t.menuProp, err = prop.Export(t.conn, MenuPath, prop.Map{MenuInterface: {
		"Version":       ro(uint32(3)),
		"TextDirection": ro("ltr"),
		"Status":        ro("normal"),
		"IconThemePath": ro([]string{}),
	}})
	if err != nil {
		return fmt.Errorf("tray: export menu properties: %w", err)
	}
	menuNode := &introspect.Node{
		Name: string(MenuPath),
		Interfaces: []introspect.Interface{
			introspect.IntrospectData,
			prop.IntrospectData,
			{
				Name:       MenuInterface,
				Methods:    introspect.Methods(m),
				Properties: t.menuProp.Introspection(MenuInterface),
				Signals: []introspect.Signal{
					{Name: "ItemsPropertiesUpdated", Args: []introspect.Arg{
						{Name: "updatedProps", Type: "a(ia{sv})"},
						{Name: "removedProps", Type: "a(ias)"},
					}},
					{Name: "LayoutUpdated", Args: []introspect.Arg{
						{Name: "revision", Type: "u"},
						{Name: "parent", Type: "i"},
					}},
					{Name: "ItemActivationRequested", Args: []introspect.Arg{
						{Name: "id", Type: "i"},
						{Name: "timestamp", Type: "u"},
					}},
				},
			},
		},
	}
	if err := t.conn.Export(introspect.NewIntrospectable(menuNode), MenuPath, "org.freedesktop.DBus.Introspectable"); err != nil {
		return fmt.Errorf("tray: export menu introspection: %w", err)
	}
	return nil
}

// unexport removes everything export put on the connection.
func (t *Tray) unexport() {
	for _, path := range []dbus.ObjectPath{ItemPath, MenuPath} {
		for _, iface := range []string{ItemInterface, MenuInterface, "org.freedesktop.DBus.Properties", "org.freedesktop.DBus.Introspectable"} {
			t.conn.Export(nil, path, iface)
		}
	}
}

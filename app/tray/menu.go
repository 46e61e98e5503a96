package tray

import (
	"fmt"
	"sync"

	"github.com/godbus/dbus/v5"
)

// Menu item ids; 0 is the dbusmenu root.
const (
	idRoot int32 = iota
	idToggle
	idModel
	idSeparator
	idQuit
)

// ToggleLabel and QuitLabel are the labels of the action items.
const (
	ToggleLabel = "Show / hide ruvllm"
	QuitLabel   = "Quit"
)

// layout is one dbusmenu layout node, D-Bus signature (ia{sv}av); children
// are variants holding layout values.
type layout struct {
	ID       int32
	Props    map[string]dbus.Variant
	Children []dbus.Variant
}

// itemProps is one entry of GetGroupProperties and ItemsPropertiesUpdated,
// D-Bus signature (ia{sv}).
type itemProps struct {
	ID    int32
	Props map[string]dbus.Variant
}

// removedProps is one entry of ItemsPropertiesUpdated's second argument,
// D-Bus signature (ias).
type removedProps struct {
	ID    int32
	Names []string
}

// event is one entry of EventGroup, D-Bus signature (isvu).
type event struct {
	ID        int32
	EventID   string
	Data      dbus.Variant
	Timestamp uint32
}

// menu is the object exported at MenuPath; its methods are the
// com.canonical.dbusmenu methods hosts call to draw the menu and report
// clicks. It keeps its own lock so hosts reading the layout never wait on
// the Tray's.
type menu struct {
	t *Tray

	mu       sync.Mutex
	revision uint32
	model    string
}

func newMenu(t *Tray, model string) *menu {
	return &menu{t: t, revision: 1, model: model}
}

func (m *menu) modelLabel() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.modelLabelLocked()
}

func (m *menu) modelLabelLocked() string {
	if m.model == "" {
		return "Model: none"
	}
	return "Model: " + m.model
}

// setModel records a new model name and bumps the layout revision; it
// reports whether anything changed.
func (m *menu) setModel(name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.model == name {
		return false
	}
	m.model = name
	m.revision++
	return true
}

// emitModelChanged tells hosts the model line changed, both as a property
// update (cheap for hosts that track items) and as a layout revision (hosts
// that cache the whole layout refetch it).
func (m *menu) emitModelChanged() error {
	m.mu.Lock()
	rev := m.revision
	props := m.propsLocked(idModel)
	m.mu.Unlock()
	conn := m.t.conn
	updated := []itemProps{{ID: idModel, Props: map[string]dbus.Variant{"label": props["label"]}}}
	if err := conn.Emit(MenuPath, MenuInterface+".ItemsPropertiesUpdated", updated, []removedProps{}); err != nil {
		return fmt.Errorf("tray: emit ItemsPropertiesUpdated: %w", err)
	}
	if err := conn.Emit(MenuPath, MenuInterface+".LayoutUpdated", rev, idRoot); err != nil {
		return fmt.Errorf("tray: emit LayoutUpdated: %w", err)
	}
	return nil
}

// children lists the root's items in order.
var children = []int32{idToggle, idModel, idSeparator, idQuit}

// propsLocked returns the full property set of item id, nil if there is no
// such item; m.mu held.
func (m *menu) propsLocked(id int32) map[string]dbus.Variant {
	v := dbus.MakeVariant
	switch id {
	case idRoot:
		return map[string]dbus.Variant{"children-display": v("submenu")}
	case idToggle:
		return map[string]dbus.Variant{"label": v(ToggleLabel), "enabled": v(true), "visible": v(true)}
	case idModel:
		return map[string]dbus.Variant{"label": v(m.modelLabelLocked()), "enabled": v(false), "visible": v(true)}
	case idSeparator:
		return map[string]dbus.Variant{"type": v("separator"), "visible": v(true)}
	case idQuit:
		return map[string]dbus.Variant{"label": v(QuitLabel), "enabled": v(true), "visible": v(true)}
	}
	return nil
}

// filter keeps only the named properties; no names keeps all.
func filter(props map[string]dbus.Variant, names []string) map[string]dbus.Variant {
	if len(names) == 0 {
		return props
	}
	out := make(map[string]dbus.Variant, len(names))
	for _, n := range names {
		if v, ok := props[n]; ok {
			out[n] = v
		}
	}
	return out
}

func noSuchItem(id int32) *dbus.Error {
	return dbus.NewError("com.canonical.dbusmenu.Error.NoSuchItem", []any{fmt.Sprintf("no menu item with id %d", id)})
}

// GetLayout returns the revision and the subtree under parentID, down to
// recursionDepth levels (-1: all), with the named properties (none: all).
func (m *menu) GetLayout(parentID, recursionDepth int32, propertyNames []string) (uint32, layout, *dbus.Error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	props := m.propsLocked(parentID)
	if props == nil {
		return 0, layout{}, noSuchItem(parentID)
	}
	l := layout{ID: parentID, Props: filter(props, propertyNames), Children: []dbus.Variant{}}
	if parentID == idRoot && recursionDepth != 0 {
		for _, id := range children {
			child := layout{ID: id, Props: filter(m.propsLocked(id), propertyNames), Children: []dbus.Variant{}}
			l.Children = append(l.Children, dbus.MakeVariant(child))
		}
	}
	return m.revision, l, nil
}

// GetGroupProperties returns the named properties (none: all) of the listed
// items (none: every item); unknown ids are skipped.
func (m *menu) GetGroupProperties(ids []int32, propertyNames []string) ([]itemProps, *dbus.Error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(ids) == 0 {
		ids = append([]int32{idRoot}, children...)
	}
	out := []itemProps{}
	for _, id := range ids {
		if props := m.propsLocked(id); props != nil {
			out = append(out, itemProps{ID: id, Props: filter(props, propertyNames)})
		}
	}
	return out, nil
}

// GetProperty returns one property of one item.
func (m *menu) GetProperty(id int32, name string) (dbus.Variant, *dbus.Error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	props := m.propsLocked(id)
	if props == nil {
		return dbus.Variant{}, noSuchItem(id)
	}
	v, ok := props[name]
	if !ok {
		return dbus.Variant{}, dbus.NewError("com.canonical.dbusmenu.Error.NoSuchProperty", []any{fmt.Sprintf("item %d has no property %q", id, name)})
	}
	return v, nil
}

// Event reports user interaction with an item; "clicked" on the action
// items runs the matching callback, other events ("hovered", "opened",
// "closed") are accepted and ignored.
func (m *menu) Event(id int32, eventID string, data dbus.Variant, timestamp uint32) *dbus.Error {
	m.mu.Lock()
	known := m.propsLocked(id) != nil
	m.mu.Unlock()
	if !known {
		return noSuchItem(id)
	}
	if eventID != "clicked" {
		return nil
	}
	switch id {
	case idToggle:
		m.t.callback(m.t.opts.OnToggle)
	case idQuit:
		m.t.callback(m.t.opts.OnQuit)
	}
	return nil
}

// EventGroup is Event for several items at once; it returns the ids that do
// not exist.
func (m *menu) EventGroup(events []event) ([]int32, *dbus.Error) {
	bad := []int32{}
	for _, e := range events {
		if err := m.Event(e.ID, e.EventID, e.Data, e.Timestamp); err != nil {
			bad = append(bad, e.ID)
		}
	}
	return bad, nil
}

// AboutToShow is called before a (sub)menu opens; the layout is always
// current, so no update is needed.
func (m *menu) AboutToShow(id int32) (bool, *dbus.Error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.propsLocked(id) == nil {
		return false, noSuchItem(id)
	}
	return false, nil
}

// AboutToShowGroup is AboutToShow for several items; it returns the ids
// needing an update (none) and the ids that do not exist.
func (m *menu) AboutToShowGroup(ids []int32) ([]int32, []int32, *dbus.Error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	bad := []int32{}
	for _, id := range ids {
		if m.propsLocked(id) == nil {
			bad = append(bad, id)
		}
	}
	return []int32{}, bad, nil
}

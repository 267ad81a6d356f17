// The C surface of ncursesw that NottyTerminal uses, made importable by Swift.
//
// SwiftPM drops pkg-config's -D flags, so the wide-character API must be switched on here,
// before the header is read. Macros built on NCURSES_BITS, getmaxyx, the KEY_* codes and the
// `stdscr`/`stdout` globals are wrapped in static inline functions (Swift 6 rejects shared
// mutable globals and cannot import function-like macros).
#ifndef NOTTY_CNCURSESW_SHIM_H
#define NOTTY_CNCURSESW_SHIM_H

#ifndef NCURSES_WIDECHAR
#define NCURSES_WIDECHAR 1
#endif
#ifndef _XOPEN_SOURCE_EXTENDED
#define _XOPEN_SOURCE_EXTENDED 1
#endif

#include <locale.h>
#include <langinfo.h>
#include <stdio.h>
#include <wchar.h>
#include <ncursesw/curses.h>

// MARK: - Globals

static inline FILE *notty_stdout(void) { return stdout; }
static inline FILE *notty_stdin(void) { return stdin; }
static inline WINDOW *notty_stdscr(void) { return stdscr; }
static inline int notty_colors(void) { return COLORS; }

// MARK: - Status codes

static inline int notty_ok(void) { return OK; }
/// What `wget_wch` returns when the value is a KEY_* code rather than a character.
static inline int notty_key_code_yes(void) { return KEY_CODE_YES; }

// MARK: - Attributes and colour pairs

static inline attr_t notty_a_normal(void) { return A_NORMAL; }
static inline attr_t notty_a_bold(void) { return A_BOLD; }
static inline attr_t notty_a_reverse(void) { return A_REVERSE; }
static inline attr_t notty_a_dim(void) { return A_DIM; }
static inline attr_t notty_a_underline(void) { return A_UNDERLINE; }

// MARK: - Geometry

static inline int notty_rows(const WINDOW *win) { int y, x; getmaxyx(win, y, x); (void)x; return y; }
static inline int notty_columns(const WINDOW *win) { int y, x; getmaxyx(win, y, x); (void)y; return x; }

// MARK: - Key codes

static inline int notty_key_up(void) { return KEY_UP; }
static inline int notty_key_down(void) { return KEY_DOWN; }
static inline int notty_key_left(void) { return KEY_LEFT; }
static inline int notty_key_right(void) { return KEY_RIGHT; }
static inline int notty_key_home(void) { return KEY_HOME; }
static inline int notty_key_end(void) { return KEY_END; }
static inline int notty_key_ppage(void) { return KEY_PPAGE; }
static inline int notty_key_npage(void) { return KEY_NPAGE; }
static inline int notty_key_enter(void) { return KEY_ENTER; }
static inline int notty_key_backspace(void) { return KEY_BACKSPACE; }
static inline int notty_key_dc(void) { return KEY_DC; }
static inline int notty_key_btab(void) { return KEY_BTAB; }
static inline int notty_key_resize(void) { return KEY_RESIZE; }

// MARK: - Painting

/// Paints one cell at (y, x) without moving the window's cursor and without wrapping, so the
/// bottom-right cell is safe. `wch` is NUL-terminated: a spacing character followed by up to
/// CCHARW_MAX-1 zero-width ones (setcchar stops at the first further spacing character). A
/// wide character also claims the cell to its right. Falls back to the first character alone
/// when setcchar refuses the sequence.
static inline int notty_put_cell(WINDOW *win, int y, int x, const wchar_t *wch, attr_t attrs, short pair) {
    cchar_t cell;
    if (setcchar(&cell, wch, attrs, pair, NULL) == ERR) {
        wchar_t first[2] = { wch[0], L'\0' };
        if (setcchar(&cell, first, attrs, pair, NULL) == ERR) {
            return ERR;
        }
    }
    return mvwadd_wchnstr(win, y, x, &cell, 1);
}

#endif

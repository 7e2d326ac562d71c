// The PEGTL grammar of one statement of sharded Einstein notation (NOTATION.md 2-5, 7).
//
// The file is first cut into statements by splitter.hpp (newline, `;`, `\\`, comments,
// continuation lines); each piece is parsed with `chunk`. Every `need<>` is a point of no
// return whose message (with a stable code) is in errors.hpp. Included by parser/ only.
#pragma once

#include <tao/pegtl.hpp>
#include <tao/pegtl/contrib/analyze_traits.hpp>

#include <cstddef>
#include <cstring>
#include <type_traits>

namespace shardscope::parser::grammar {

namespace pegtl = tao::pegtl;
using namespace pegtl;

// ---------------------------------------------------------------------------------------------
// Nesting guard: no input may overflow the stack, so recursive rules count their depth.

inline constexpr std::size_t kMaxNesting = 200;
struct too_deep : failure {};

/// nested := R, but at most kMaxNesting levels deep.
template <typename R>
struct nested {
    using rule_t = nested;
    using subs_t = type_list<R>;

    template <apply_mode A, rewind_mode M, template <typename...> class Action,
              template <typename...> class Control, typename Input, typename... States>
    static bool match(Input& in, States&&... st) {
        struct Guard {
            std::size_t& d;
            ~Guard() { --d; }
        } guard{++in.private_depth};
        if (in.private_depth > kMaxNesting) Control<too_deep>::raise(in, st...);
        return Control<R>::template match<A, M, Action, Control>(in, st...);
    }
};

/// The bytes a one-byte rule (one<>, alpha, alnum, digit, a sor of them) accepts, compared
/// as PEGTL compares them (as char); `known` is false for any other rule.
template <typename R>
struct byte_set {
    static constexpr bool known = false;
};
template <char... Cs>
struct byte_set<internal::one<internal::result_on_found::success, internal::peek_char, Cs...>> {
    static constexpr bool known = true;
    static constexpr bool test(char c) { return ((c == Cs) || ...); }
};
template <char Lo, char Hi>
struct byte_set<internal::range<internal::result_on_found::success, internal::peek_char, Lo, Hi>> {
    static constexpr bool known = true;
    static constexpr bool test(char c) { return Lo <= c && c <= Hi; }
};
template <char... Cs>
struct byte_set<internal::ranges<internal::peek_char, Cs...>> {
    static constexpr bool known = sizeof...(Cs) % 2 == 0;
    static constexpr bool test(char c) {
        constexpr char bounds[] = {Cs...};
        for (std::size_t i = 0; i + 1 < sizeof...(Cs); i += 2)
            if (bounds[i] <= c && c <= bounds[i + 1]) return true;
        return false;
    }
};
template <typename... Rs>
struct byte_set<internal::sor<Rs...>> {
    static constexpr bool known = (byte_set<typename Rs::rule_t>::known && ...);
    static constexpr bool test(char c) { return (byte_set<typename Rs::rule_t>::test(c) || ...); }
};

/// &F for a one-byte F: a test of the next byte, without at<>'s marker and F's control.
template <typename F>
struct byte_ahead {
    using rule_t = byte_ahead;
    using subs_t = empty_list;

    template <apply_mode A, rewind_mode M, template <typename...> class Action,
              template <typename...> class Control, typename Input, typename... States>
    static bool match(Input& in, States&&...) {
        return !in.empty() && byte_set<typename F::rule_t>::test(in.peek_char());
    }
};

/// when<F, R> := &F R — tries R only where its first character F is. The parse tree allocates
/// a node for every attempt at a kept rule, so cheap guards keep failed attempts free. Where
/// F is one byte (most guards), &F is a byte test (byte_ahead).
template <typename F, typename R>
struct when
    : seq<std::conditional_t<byte_set<typename F::rule_t>::known, byte_ahead<F>, at<F>>, R> {};
/// The first byte of every non-ASCII character the grammar knows (primes, scripts, arrows...).
struct utf8_lead : one<'\xC2', '\xCE', '\xCF', '\xE2'> {};

/// need<R> := R, or an error. PEGTL's must<R> reports where the failed attempt at R stopped;
/// need<R> rewinds first, so the caret is where R should have begun. The message and code
/// of R are in errors.hpp.
template <typename R>
struct need {
    using rule_t = need;
    using subs_t = type_list<R>;

    template <apply_mode A, rewind_mode M, template <typename...> class Action,
              template <typename...> class Control, typename Input, typename... States>
    static bool match(Input& in, States&&... st) {
        {
            // The marker rewinds in its destructor, so it must be gone before raising.
            auto mark = in.template mark<rewind_mode::required>();
            if (Control<R>::template match<A, rewind_mode::active, Action, Control>(in, st...))
                return mark(true);
        }
        Control<R>::raise(in, st...);
    }
};

// ---------------------------------------------------------------------------------------------
// Whitespace and LaTeX noise.

/// continuation := '\' newline
struct continuation : seq<one<'\\'>, opt<one<'\r'>>, one<'\n'>> {};
/// latex_space := '\,' | '\ ' | '\;' | '\:' | '\!'
struct latex_space : seq<one<'\\'>, one<',', ' ', ';', ':', '!', '\t'>> {};
/// latex_noise_word := '\left' | '\right' | '\quad' | '\qquad' | '\nonumber' | ...
struct latex_noise_word
    : seq<one<'\\'>,
          sor<TAO_PEGTL_STRING("left"), TAO_PEGTL_STRING("right"), TAO_PEGTL_STRING("quad"),
              TAO_PEGTL_STRING("qquad"), TAO_PEGTL_STRING("nonumber"), TAO_PEGTL_STRING("notag"),
              TAO_PEGTL_STRING("displaystyle"), TAO_PEGTL_STRING("limits"), TAO_PEGTL_STRING("big"),
              TAO_PEGTL_STRING("Big")>,
          not_at<alpha>> {};
/// latex_env := ('\begin' | '\end') '{' name '}'
struct latex_env : seq<one<'\\'>, sor<TAO_PEGTL_STRING("begin"), TAO_PEGTL_STRING("end")>,
                       star<blank>, one<'{'>, star<not_one<'}', '\n'>>, one<'}'>> {};
/// ws := blank | '&' | '$' | NBSP | continuation | LaTeX spacing and layout commands
/// Ordered for speed: `sp` runs between every two tokens, and most characters are none of
/// these, so the backslash forms sit behind one test for '\'.
struct latex_ws : sor<continuation, latex_space, latex_noise_word, latex_env> {};
/// ws := ' ' | '\t' | '\r' | '&' | '$' | NBSP | latex_ws        (one of them)
/// Written by hand, as one switch on the byte: the same language as
/// sor<one<' ', '\t', '\r', '&', '$'>, seq<at<one<'\\'>>, latex_ws>, seq<one<0xC2>, one<0xA0>>>.
struct ws {
    using rule_t = ws;
    using subs_t = type_list<latex_ws>;

    template <apply_mode A, rewind_mode M, template <typename...> class Action,
              template <typename...> class Control, typename Input, typename... States>
    static bool match(Input& in, States&&... st) {
        if (in.empty()) return false;
        switch (in.peek_char()) {
        case ' ':
        case '\t':
        case '\r':
        case '&':
        case '$':
            in.bump_in_this_line(1);
            return true;
        case '\\':
            return Control<latex_ws>::template match<A, rewind_mode::required, Action, Control>(
                in, st...);
        case '\xC2':
            if (in.size(2) >= 2 && in.peek_char(1) == '\xA0') {
                in.bump_in_this_line(2);
                return true;
            }
            return false;
        default:
            return false;
        }
    }
};
/// sp := ws*          (it runs between every two tokens: a loop, not a star of rules)
struct sp {
    using rule_t = sp;
    using subs_t = type_list<ws>;

    template <apply_mode A, rewind_mode M, template <typename...> class Action,
              template <typename...> class Control, typename Input, typename... States>
    static bool match(Input& in, States&&... st) {
        while (ws::match<A, M, Action, Control>(in, st...)) {
        }
        return true;
    }
};

// ---------------------------------------------------------------------------------------------
// Names, numbers, primes, mesh axes.

/// identifier := letter (letter | digit)*      ('_' is never part of a name)
struct identifier : seq<alpha, star<alnum>> {};
/// integer := digit+
struct integer : plus<digit> {};
/// number := digit+ ('.' digit+)? (('e'|'E') ('+'|'-')? digit+)?
struct number : seq<plus<digit>, opt<one<'.'>, plus<digit>>,
                    opt<one<'e', 'E'>, opt<one<'+', '-'>>, plus<digit>>> {};
/// primes := ("'" | '′' | '″' | '‴')+
struct primes : plus<sor<one<'\''>, utf8::one<0x2032, 0x2033, 0x2034>>> {};

/// axes_digits := digit+          (each digit is one axis: `_{01}` is axes 0 and 1)
struct axes_digits : plus<digit> {};
/// axis_word := identifier         (a named axis: `tp`, `X`)
struct axis_word : identifier {};
/// axes_unicode := ('₀'..'₉')+
struct axes_unicode : plus<utf8::range<0x2080, 0x2089>> {};
/// axis_item := axes_digits | axis_word
/// (Each kept alternative behind a test of its first byte: a failed attempt at a kept rule
/// costs a node pushed and dropped, and every list tries one item past its last.)
struct axis_item : sor<when<digit, axes_digits>, when<alpha, axis_word>> {};
/// axis_list := '{' axis_item ((',' | ' ') axis_item)* '}'
struct axis_list_close : one<'}'> {};
struct axis_first : axis_item {};
struct axis_list : seq<one<'{'>, sp, need<axis_first>, star<sp, opt<one<','>, sp>, axis_item>, sp,
                       need<axis_list_close>> {};

/// open_mark := '?'      (an open sharding, docs/reference.md "Open shardings": `f_?`)
struct open_mark : one<'?'> {};
struct open_close : one<'}'> {};
/// open_axis_list := '{' (axis_item ((',' | ' ') axis_item)* ','?)? '?' '}'
///                   (`f_{?}`: any axis or none; `f_{tp?}`, `f_{dp,tp?}`: one of these or none)
struct open_axis_list : seq<one<'{'>, sp,
                            sor<open_mark, seq<axis_item, star<sp, opt<one<','>, sp>, axis_item>,
                                               sp, opt<one<','>, sp>, open_mark>>,
                            sp, need<open_close>> {};
/// Whether a '?' is ahead in the statement: without one, open_axis_list can neither match nor
/// raise, so the guard spares every `_{dp}` a failed attempt at it (consumes nothing).
struct question_ahead {
    using rule_t = question_ahead;
    using subs_t = empty_list;

    template <apply_mode A, rewind_mode M, template <typename...> class Action,
              template <typename...> class Control, typename Input, typename... States>
    static bool match(Input& in, States&&...) {
        return std::memchr(in.current(), '?', in.size(0)) != nullptr;
    }
};
struct open_spec
    : sor<when<one<'?'>, open_mark>, when<one<'{'>, seq<question_ahead, open_axis_list>>> {};

/// mesh_sub := '_' (open_spec | axis_list | digit | letter) | axes_unicode      (subscript form)
struct axis_letter : alpha {};
struct mesh_sub_spec
    : sor<open_spec, axis_list, when<digit, axes_digits>, when<alpha, axis_letter>> {};
struct mesh_sub : sor<seq<sp, one<'_'>, sp, need<mesh_sub_spec>>, when<utf8_lead, axes_unicode>> {};
/// bracket_mesh_sub := '_' (open_spec | axis_list | axes_digits | axis_word) | axes_unicode
///                     (bracket form; an open spec in a partial marker is an error, P241)
struct bracket_mesh_spec
    : sor<open_spec, axis_list, when<digit, axes_digits>, when<alpha, axis_word>> {};
struct bracket_mesh_sub
    : sor<seq<sp, one<'_'>, sp, need<bracket_mesh_spec>>, when<utf8_lead, axes_unicode>> {};

// ---------------------------------------------------------------------------------------------
// Indices and index lists.

/// idx_letter := letter           (subscript form: every index is one letter)
struct idx_letter : alpha {};
/// idx_word := identifier         (`{seq}` in subscript form, or any bracket-form index)
struct idx_word : identifier {};
struct brace_close : one<'}'> {};
/// brace_index := '{' idx_word '}'
struct brace_index : seq<one<'{'>, sp, idx_word, sp, need<brace_close>> {};

/// A lookahead that consumes nothing: whether, after blanks (spaces, tabs), the next byte is
/// one that `Starts::begins` accepts. The guards below say where an optional part may begin,
/// one test instead of several failed attempts.
template <typename Starts>
struct ahead_after_blanks {
    using rule_t = ahead_after_blanks;
    using subs_t = empty_list;

    template <apply_mode A, rewind_mode M, template <typename...> class Action,
              template <typename...> class Control, typename Input, typename... States>
    static bool match(Input& in, States&&...) {
        const char* p = in.current();
        const char* const end = in.end();
        while (p != end && (*p == ' ' || *p == '\t'))
            ++p;
        return p != end && Starts::begins(*p);
    }
};

/// Whether an index's name may be followed by more of the index (primes, a mesh subscript):
/// a prime or a Unicode axis right after it, or a '_' after whitespace (`b_0`, `b _0`). Most
/// indices end at the next letter, brace or space before a letter: one test instead of
/// three failed attempts. Conservative (any byte that may begin whitespace other than a
/// blank says yes).
struct index_suffix_start {
    static constexpr bool begins(char c) {
        switch (c) {
        case '_':  // a mesh subscript
        case '\'': // a prime (only right after the name: the attempt decides)
        case '\\': // LaTeX spacing, or a continuation
        case '&':
        case '$':
        case '\r':
        case '\xC2': // a no-break space, or a Unicode superscript digit
        case '\xCE':
        case '\xCF':
        case '\xE2': // a Unicode prime or subscript digit
            return true;
        default:
            return false;
        }
    }
};
using index_suffix_ahead = ahead_after_blanks<index_suffix_start>;

/// index := (idx_letter | brace_index) primes? mesh_sub? primes?
/// (The suffix tried only where index_suffix_ahead says it may be.)
struct prime_lead : sor<one<'\''>, utf8_lead> {};
struct index
    : seq<sor<idx_letter, brace_index>, opt<index_suffix_ahead, opt<when<prime_lead, primes>>,
                                            opt<mesh_sub>, opt<when<prime_lead, primes>>>> {};
/// bracket_index := idx_word primes? bracket_mesh_sub? primes?
struct bracket_index : seq<idx_word, opt<index_suffix_ahead, opt<when<prime_lead, primes>>,
                                         opt<bracket_mesh_sub>, opt<when<prime_lead, primes>>>> {};

struct group_close : one<')'> {};
struct group_first : index {};
/// group := '(' index+ ')'
struct group : seq<one<'('>, sp, need<group_first>, star<sp, opt<one<','>, sp>, index>, sp,
                   need<group_close>> {};
struct bracket_group_first : bracket_index {};
/// bracket_group := '(' bracket_index (','? bracket_index)* ')'
struct bracket_group : seq<one<'('>, sp, need<bracket_group_first>,
                           star<sp, opt<one<','>, sp>, bracket_index>, sp, need<group_close>> {};

struct sub_list_close : one<'}'> {};
/// sub_list := '{' ((group | index) ','?)* '}'
struct sub_list : seq<one<'{'>, sp,
                      star<sor<when<one<'('>, group>, when<sor<alpha, one<'{'>>, index>>, sp,
                           opt<one<','>, sp>>,
                      need<sub_list_close>> {};
/// bare_index := letter primes?                       (`x_k`)
struct bare_index : seq<idx_letter, opt<primes>> {};
/// bare_partial := digit+ | '{' digit+ '}'            (`z_0`: a scalar partial over axis 0)
struct bare_partial : sor<axes_digits, seq<one<'{'>, sp, axes_digits, sp, one<'}'>>> {};
struct subscript_body
    : sor<when<sor<digit, seq<one<'{'>, sp, digit>>, bare_partial>, sub_list, bare_index> {};
/// subscript := '_' (bare_partial | sub_list | bare_index) | axes_unicode
struct unicode_partial : axes_unicode {};
struct subscript
    : sor<seq<sp, one<'_'>, sp, need<subscript_body>>, when<utf8_lead, unicode_partial>> {};

struct bracket_close : one<']'> {};
/// bracket_list := '[' ((bracket_group | bracket_index) ','?)* ']'
struct bracket_list : seq<one<'['>, sp,
                          star<sor<when<one<'('>, bracket_group>, when<alpha, bracket_index>>, sp,
                               opt<one<','>, sp>>,
                          need<bracket_close>> {};

/// label_text := '{' alnum+ '}' | alnum        (superscript label: `W^0`, `W^{up}`)
struct label_text : plus<alnum> {};
struct label_close : one<'}'> {};
struct label_braced : seq<one<'{'>, sp, need<label_text>, sp, need<label_close>> {};
struct label_char : alnum {};
struct label_spec : sor<label_braced, label_char> {};
/// superscript := '^' label_spec | ('⁰'..'⁹')+
struct label_unicode : plus<utf8::one<0x2070, 0x00B9, 0x00B2, 0x00B3, 0x2074, 0x2075, 0x2076,
                                      0x2077, 0x2078, 0x2079>> {};
struct superscript : sor<seq<sp, one<'^'>, sp, need<label_spec>>, when<utf8_lead, label_unicode>> {
};

/// partial_marker := '{' 'U' '_' (axis_list | axes_digits | axis_word) '}'
struct partial_close : one<'}'> {};
struct partial_marker : seq<sp, one<'{'>, sp, one<'U'>, sp, one<'_'>, sp, need<bracket_mesh_spec>,
                            sp, need<partial_close>> {};

/// tensor_ref := identifier superscript? (bracket_list | subscript)? superscript? partial_marker?
/// (The tail after the indices tried only where ref_tail_ahead says it may begin.)
struct tensor_name : identifier {};
struct partial_lead : seq<sp, one<'{'>, sp, one<'U'>> {};
/// Whether a reference's tail (superscript, partial marker) may begin: '^', '{' or a Unicode
/// superscript after blanks, or a byte that may begin other whitespace.
struct ref_tail_start {
    static constexpr bool begins(char c) {
        switch (c) {
        case '^':  // a superscript
        case '{':  // a partial marker
        case '\\': // LaTeX spacing, or a continuation
        case '&':
        case '$':
        case '\r':
        case '\xC2': // a no-break space, or a Unicode superscript digit
        case '\xE2':
            return true;
        default:
            return false;
        }
    }
};
using ref_tail_ahead = ahead_after_blanks<ref_tail_start>;
struct tensor_ref
    : seq<tensor_name, opt<superscript>, opt<sor<seq<sp, when<one<'['>, bracket_list>>, subscript>>,
          opt<ref_tail_ahead, opt<superscript>, opt<when<partial_lead, partial_marker>>>> {};

// ---------------------------------------------------------------------------------------------
// Expressions.

struct expr;
struct factor;

/// Lookahead that succeeds when a known function name follows (built-in or `fn`-declared).
/// Defined in parser.cpp: it consults the functions declared so far.
struct known_function {
    using rule_t = known_function;
    using subs_t = empty_list;
    template <apply_mode A, rewind_mode M, template <typename...> class Action,
              template <typename...> class Control, typename Input, typename... States>
    static bool match(Input& in, States&&... st);
};

/// latex_fn := '\' ('texttt'|'mathrm'|'operatorname'|'mathtt'|'textrm'|'text') '{' fn_word '}'
///           | '\' fn_word
struct fn_word : identifier {};
struct latex_fn_word : identifier {};
struct fn_unicode : utf8::one<0x03C6, 0x03D5, 0x03C3, 0x03A3> {}; // φ ϕ σ Σ
struct latex_font
    : sor<TAO_PEGTL_STRING("texttt"), TAO_PEGTL_STRING("mathrm"), TAO_PEGTL_STRING("operatorname"),
          TAO_PEGTL_STRING("mathtt"), TAO_PEGTL_STRING("textrm"), TAO_PEGTL_STRING("text")> {};
struct latex_fn
    : seq<one<'\\'>,
          sor<seq<latex_font, sp, one<'{'>, sp, latex_fn_word, sp, one<'}'>>, latex_fn_word>> {};

struct call_index_list : sor<sub_list, bare_index> {};
/// call_sub := '_' (sub_list | bare_index)
struct call_sub : seq<sp, one<'_'>, sp, need<call_index_list>> {};
struct paren_close : one<')'> {};
struct arg_expr : seq<expr> {};
/// call_arg := '(' expr ')' | '{' expr '}' | factor      (`\exp x` applies to one factor)
struct call_arg
    : sor<seq<sp, one<'('>, sp, need<arg_expr>, sp, need<paren_close>>,
          seq<sp, one<'{'>, sp, need<arg_expr>, sp, need<brace_close>>, seq<sp, factor>> {};
/// paren_arg := '(' expr ')'
struct paren_arg : seq<sp, one<'('>, sp, need<arg_expr>, sp, need<paren_close>> {};
/// call := (latex_fn | fn_unicode) call_sub? call_arg | fn_word call_sub? paren_arg
/// A function written as LaTeX (or φ) may apply to the one factor that follows, as in
/// `\texttt{sum}_{u}\exp(...)`; a plain name needs its parentheses (`relu x` is an error).
/// Tried only where a known function's name is (factor_body's guard).
struct call : sor<seq<sor<latex_fn, fn_unicode>, opt<call_sub>, need<call_arg>>,
                  seq<fn_word, opt<call_sub>, need<paren_arg>>> {};

/// A name directly followed by '(' that is not a known function, plain or in LaTeX.
struct unknown_function : failure {};
struct unknown_call : seq<at<identifier, sp, one<'('>>, raise<unknown_function>> {};
struct latex_fn_font : sor<TAO_PEGTL_STRING("texttt"), TAO_PEGTL_STRING("mathrm"),
                           TAO_PEGTL_STRING("operatorname"), TAO_PEGTL_STRING("mathtt")> {};
struct unknown_latex_call
    : seq<at<one<'\\'>, latex_fn_font, sp, one<'{'>>, raise<unknown_function>> {};

/// paren := '(' expr ')'
struct inner_expr : seq<expr> {};
struct paren : seq<one<'('>, sp, need<inner_expr>, sp, need<paren_close>> {};
/// frac := '\frac' '{' expr '}' '{' expr '}'
struct frac_open : one<'{'> {};
struct frac_num : seq<expr> {};
struct frac_den : seq<expr> {};
struct frac
    : seq<one<'\\'>,
          sor<TAO_PEGTL_STRING("frac"), TAO_PEGTL_STRING("dfrac"), TAO_PEGTL_STRING("tfrac")>,
          not_at<alpha>, sp, need<frac_open>, sp, need<frac_num>, sp, need<brace_close>, sp,
          need<frac_open>, sp, need<frac_den>, sp, need<brace_close>> {};

/// word_factor := call | tensor_ref        (a factor that starts with a letter)
/// (unknown_call and tensor_ref need a letter, and unknown_latex_call, paren and frac another
/// first byte: each is tried only where it can match.)
struct word_factor : sor<seq<at<known_function>, call>, unknown_call, tensor_ref> {};
/// factor := number | call | tensor_ref | paren | frac
/// (The kept number and call behind their guards, so that a tensor pushes no failed node.)
struct factor_body : sor<when<digit, number>, when<alpha, word_factor>,
                         seq<at<known_function>, call>, unknown_latex_call, paren, frac> {};
struct factor : nested<factor_body> {};

/// mul_op := '*' | '·' | '⋅' | '×' | '\cdot' | '\times'
struct mul_op
    : sor<one<'*'>, utf8::one<0x00B7, 0x22C5, 0x00D7>,
          seq<one<'\\'>, sor<TAO_PEGTL_STRING("cdot"), TAO_PEGTL_STRING("times")>, not_at<alpha>>> {
};
struct div_op : one<'/'> {};
struct juxtaposed : factor {};
struct operand : factor {};
/// term := factor (('*' | '/' | juxtaposition) factor)*
struct factor_lead : sor<alnum, one<'(', '\\'>, utf8_lead> {};
struct mul_lead : sor<one<'*', '\\'>, utf8_lead> {};
struct term : seq<factor, star<sp, sor<when<mul_lead, seq<mul_op, sp, need<operand>>>,
                                       when<one<'/'>, seq<div_op, sp, need<operand>>>,
                                       when<factor_lead, juxtaposed>>>> {};
/// expr := '-'? term (('+' | '-') term)*
struct neg_sign : one<'-'> {};
struct add_op : seq<one<'+', '-'>, not_at<one<'>', '='>>> {};
struct next_term : term {};
struct expr : seq<opt<when<one<'-'>, neg_sign>, sp>, term,
                  star<sp, when<one<'+', '-'>, add_op>, sp, need<next_term>>> {};

// ---------------------------------------------------------------------------------------------
// Expectations.

/// collective_name := letter (letter | digit | '-' | '_')*
struct collective_name : seq<alpha, star<sor<alnum, one<'-', '_'>>>> {};
struct collective_axes_close : one<')'> {};
struct collective_axis : axis_item {};
struct collective_axis_first : collective_axis {};
/// collective := collective_name ('(' axis_item (',' axis_item)* ')')?
struct collective
    : seq<collective_name,
          opt<sp, one<'('>, sp, need<collective_axis_first>,
              star<sp, opt<one<','>, sp>, collective_axis>, sp, need<collective_axes_close>>> {};
struct none_kw : keyword<'n', 'o', 'n', 'e'> {};
/// expect_list := 'none' | collective (',' collective)*
struct collective_next : collective {};
struct expect_list : sor<none_kw, seq<collective, star<sp, one<','>, sp, need<collective_next>>>> {
};

/// label_expect := expect_list        (the whole text of an arrow label, `\xrightarrow{...}`)
struct label_expect : seq<sp, expect_list, sp, eof> {};

/// inline_expect := '\textrm{(' expect_list ')}'        (also \text)
struct inline_expect_close : seq<one<')'>, sp, one<'}'>> {};
struct inline_expect
    : seq<one<'\\'>, sor<TAO_PEGTL_STRING("textrm"), TAO_PEGTL_STRING("text")>, sp, one<'{'>, sp,
          one<'('>, sp, need<expect_list>, sp, need<inline_expect_close>> {};

// ---------------------------------------------------------------------------------------------
// Statements.

/// arrow := '->' | '→' | '\longrightarrow' | '\rightarrow' | '\to' | '\xrightarrow{label}'
struct arrow_label;
struct arrow_label_group : seq<one<'{'>, nested<arrow_label>, one<'}'>> {};
struct arrow_label : star<sor<arrow_label_group, not_one<'{', '}'>>> {};
struct xarrow_open : one<'{'> {};
struct xrightarrow : seq<one<'\\'>, TAO_PEGTL_STRING("xrightarrow"), not_at<alpha>, sp,
                         need<xarrow_open>, arrow_label, need<brace_close>> {};
struct plain_arrow : sor<TAO_PEGTL_STRING("->"), utf8::one<0x2192>,
                         seq<one<'\\'>,
                             sor<TAO_PEGTL_STRING("longrightarrow"), TAO_PEGTL_STRING("rightarrow"),
                                 TAO_PEGTL_STRING("to"), TAO_PEGTL_STRING("mapsto")>,
                             not_at<alpha>>> {};
struct arrow : sor<xrightarrow, plain_arrow> {};

/// assign_op := '=' | ':=' | '+='
struct assign_op : sor<TAO_PEGTL_STRING(":="), TAO_PEGTL_STRING("+="), one<'='>> {};
struct rhs : expr {};
struct equation : seq<assign_op, sp, need<rhs>> {};
struct chain_target : tensor_ref {};
/// A further factor of a chain side that is a product (`W^0_{r'_0 f d'} x_{b r_0 t d'}`).
struct chain_factor : tensor_ref {};
/// chain_step := arrow tensor_ref tensor_ref*
struct chain_step : seq<arrow, sp, need<chain_target>, star<sp, when<alpha, chain_factor>>> {};
/// chain := tensor_ref* chain_step+       (after the statement's first tensor_ref)
struct chain : seq<star<when<alpha, chain_factor>, sp>, chain_step, star<sp, chain_step>> {};
struct ref_tail : sor<equation, chain> {};
/// ref_statement := tensor_ref (assign_op expr | tensor_ref* (arrow tensor_ref+)+)
struct ref_statement : seq<tensor_ref, sp, need<ref_tail>> {};

/// A declaration keyword commits only when no assignment follows (`dim = ...` is a tensor).
/// No declaration continues with '^', '[', '{', a non-ASCII character or an arrow.
template <typename Kw>
struct decl_kw : seq<Kw, sp, not_at<assign_op>, not_at<plain_arrow>, not_at<one<'^', '[', '{'>>,
                     not_at<utf8_lead>, not_at<one<'\\'>, TAO_PEGTL_STRING("xrightarrow")>> {};

/// mesh := 'mesh' (mesh_named | mesh_dims) ('devices' '[' integer* ']')?
struct mesh_axis_name : identifier {};
struct mesh_axis_size : integer {};
struct mesh_eq : one<'='> {};
struct mesh_named_axis : seq<not_at<TAO_PEGTL_KEYWORD("devices")>, mesh_axis_name, sp,
                             need<mesh_eq>, sp, need<mesh_axis_size>> {};
/// list_sep := ',' | whitespace      (`X=4 Y=2`, `X=4, Y=2`; never `X=4Y=2`)
struct list_sep : sor<seq<sp, one<','>, sp>, plus<ws>> {};
struct mesh_named : seq<mesh_named_axis, star<list_sep, mesh_named_axis>> {};
struct mesh_times : sor<one<'x', '*'>, utf8::one<0x00D7>> {};
struct mesh_dims : seq<at<digit>, mesh_axis_size, star<sp, mesh_times, sp, need<mesh_axis_size>>> {
};
struct mesh_shape : sor<mesh_dims, mesh_named> {};
struct device_id : integer {};
struct devices_open : one<'['> {};
struct devices : seq<TAO_PEGTL_KEYWORD("devices"), sp, need<devices_open>, sp,
                     star<device_id, sp, opt<one<','>, sp>>, need<bracket_close>> {};
struct mesh_decl : seq<decl_kw<TAO_PEGTL_KEYWORD("mesh")>, need<mesh_shape>, opt<sp, devices>> {};

/// dim := 'dim' binding (','? binding)*      binding := identifier primes? '=' integer
struct dim_size : integer {};
struct dim_index : seq<idx_word, opt<primes>> {};
struct dim_binding : seq<dim_index, sp, need<mesh_eq>, sp, need<dim_size>> {};
struct dim_first : dim_binding {};
struct dim_decl
    : seq<decl_kw<TAO_PEGTL_KEYWORD("dim")>, need<dim_first>, star<list_sep, dim_binding>> {};

/// split := 'split' index arrow '('? index index+ ')'?
struct split_index : seq<idx_word, opt<primes>> {};
struct split_from : split_index {};
struct split_arrow : plain_arrow {};
struct split_parts : seq<opt<one<'('>, sp>, split_index, star<sp, split_index>, sp, opt<one<')'>>> {
};
struct split_decl : seq<decl_kw<TAO_PEGTL_KEYWORD("split")>, need<split_from>, sp,
                        need<split_arrow>, sp, need<split_parts>> {};

/// dtype := 'dtype' identifier
struct dtype_name : identifier {};
struct dtype_decl : seq<decl_kw<TAO_PEGTL_KEYWORD("dtype")>, need<dtype_name>> {};

/// tensor := 'tensor' identifier superscript? ':' identifier
struct decl_tensor_name : identifier {};
struct colon : one<':'> {};
struct tensor_decl : seq<decl_kw<TAO_PEGTL_KEYWORD("tensor")>, need<decl_tensor_name>,
                         opt<superscript>, sp, need<colon>, sp, need<dtype_name>> {};

/// hw := 'hw' preset_name
struct preset_name : seq<alpha, star<sor<alnum, one<'-', '_', '.'>>>> {};
struct hw_decl : seq<decl_kw<TAO_PEGTL_KEYWORD("hw")>, need<preset_name>> {};

/// link := 'link' axis_item bandwidth latency?
struct bw_unit : sor<TAO_PEGTL_STRING("TB/s"), TAO_PEGTL_STRING("GB/s"), TAO_PEGTL_STRING("MB/s"),
                     TAO_PEGTL_STRING("KB/s"), TAO_PEGTL_STRING("TiB/s"), TAO_PEGTL_STRING("GiB/s"),
                     TAO_PEGTL_STRING("MiB/s"), TAO_PEGTL_STRING("Tb/s"), TAO_PEGTL_STRING("Gb/s"),
                     TAO_PEGTL_STRING("B/s")> {};
struct time_unit : sor<TAO_PEGTL_STRING("ns"), TAO_PEGTL_STRING("us"), TAO_PEGTL_STRING("µs"),
                       TAO_PEGTL_STRING("μs"), TAO_PEGTL_STRING("ms"), TAO_PEGTL_STRING("s")> {};
struct bandwidth : seq<number, sp, need<bw_unit>> {};
struct latency : seq<number, sp, need<time_unit>> {};
struct link_axis : axis_item {};
struct link_decl : seq<decl_kw<TAO_PEGTL_KEYWORD("link")>, need<link_axis>, sp, need<bandwidth>,
                       opt<sp, latency>> {};

/// fn := 'fn' identifier ('elementwise' | 'linear')
struct fn_decl_name : identifier {};
struct fn_kind : sor<TAO_PEGTL_KEYWORD("elementwise"), TAO_PEGTL_KEYWORD("linear")> {};
struct fn_decl : seq<decl_kw<TAO_PEGTL_KEYWORD("fn")>, need<fn_decl_name>, sp, need<fn_kind>> {};

/// param := 'param' tensor (','? tensor)*        tensor := identifier superscript?
/// train := 'train' optimizer (','? key '=' value)*   (`train adam master=f32 zero=1`)
///                                                    value := (letter | digit)+
struct param_name : identifier {};
struct param_tensor : seq<param_name, opt<superscript>> {};
struct param_first : param_tensor {};
struct param_decl
    : seq<decl_kw<TAO_PEGTL_KEYWORD("param")>, need<param_first>, star<list_sep, param_tensor>> {};
struct train_optimizer : identifier {};
struct train_key : identifier {};
struct train_eq : one<'='> {};
struct train_value : plus<alnum> {};
struct train_option : seq<train_key, sp, need<train_eq>, sp, need<train_value>> {};
struct train_decl : seq<decl_kw<TAO_PEGTL_KEYWORD("train")>, need<train_optimizer>,
                        star<list_sep, train_option>> {};

/// expect := 'expect' expect_list
struct expect_decl : seq<decl_kw<TAO_PEGTL_KEYWORD("expect")>, need<expect_list>> {};

/// repeat := 'repeat' index '=' integer ('reverse' | key '=' value)*      end := 'end'
/// (`repeat l_{pp}=32 microbatches=8 schedule=1f1b`: the pipeline's options)
struct repeat_count : integer {};
struct repeat_reverse : TAO_PEGTL_KEYWORD("reverse") {};
struct repeat_index : index {};
struct repeat_key : identifier {};
struct repeat_value : plus<alnum> {};
struct repeat_option : seq<repeat_key, sp, one<'='>, sp, need<repeat_value>> {};
struct repeat_decl
    : seq<decl_kw<TAO_PEGTL_KEYWORD("repeat")>, need<repeat_index>, sp, need<mesh_eq>, sp,
          need<repeat_count>, star<sp, sor<repeat_reverse, repeat_option>>> {};
struct end_decl : seq<TAO_PEGTL_KEYWORD("end"), sp, at<eof>> {};

/// (Every declaration starts with its keyword: a statement starting with any other byte, as
/// most equations do, tries none of them.)
struct decl_lead : one<'m', 'd', 's', 't', 'h', 'l', 'f', 'p', 'e', 'r'> {};
struct declaration_body
    : sor<mesh_decl, dim_decl, split_decl, dtype_decl, tensor_decl, hw_decl, link_decl, fn_decl,
          param_decl, train_decl, expect_decl, repeat_decl, end_decl> {};
struct declaration : when<decl_lead, declaration_body> {};
struct statement_body : sor<declaration, ref_statement> {};

/// trailing := '.' | ','        (LaTeX sentence punctuation after a displayed equation)
struct trailing_punct : one<'.', ','> {};
struct end_of_statement : eof {};
/// chunk := statement inline_expect? trailing? | (nothing but whitespace)
struct chunk : seq<sp, sor<eof, seq<need<statement_body>, sp, opt<inline_expect, sp>,
                                    opt<trailing_punct, sp>, need<end_of_statement>>>> {};

} // namespace shardscope::parser::grammar

// How pegtl::analyze sees the custom rules: `nested<R>` behaves as R, and `known_function`
// (and `question_ahead`, `ahead_after_blanks`, `byte_ahead`) is a
// lookahead that consumes nothing.
namespace tao::pegtl {
template <typename Name, typename R>
struct analyze_traits<Name, shardscope::parser::grammar::nested<R>> : analyze_seq_traits<R> {};
template <typename Name>
struct analyze_traits<Name, shardscope::parser::grammar::known_function> : analyze_opt_traits<> {};
template <typename Name>
struct analyze_traits<Name, shardscope::parser::grammar::question_ahead> : analyze_opt_traits<> {};
template <typename Name, typename S>
struct analyze_traits<Name, shardscope::parser::grammar::ahead_after_blanks<S>>
    : analyze_opt_traits<> {};
template <typename Name, typename F>
struct analyze_traits<Name, shardscope::parser::grammar::byte_ahead<F>> : analyze_opt_traits<> {};
// `ws` consumes a byte or more when it succeeds; `sp` may consume nothing.
template <typename Name>
struct analyze_traits<Name, shardscope::parser::grammar::ws> : analyze_any_traits<> {};
template <typename Name>
struct analyze_traits<Name, shardscope::parser::grammar::sp> : analyze_opt_traits<> {};
template <typename Name, typename R>
struct analyze_traits<Name, shardscope::parser::grammar::need<R>> : analyze_seq_traits<R> {};
} // namespace tao::pegtl

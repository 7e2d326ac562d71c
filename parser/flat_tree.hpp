// A parse tree in one flat, reused arena, built by a PEGTL control class.
//
// PEGTL's parse_tree allocates a node for every attempt at a kept rule and a temporary node
// for every attempt at a composite rule with a kept rule below it (to discard children on
// backtracking); that was two thirds of the parser's time. Here the nodes lie in the arena in
// preorder, each with the end of its subtree: a kept rule appends its node, and one that
// fails, or a composite rule that fails after kept rules below it matched, truncates the
// arena to where it stood (one integer). No links are made or undone: a node's children are
// the nodes after it, each skipping to the end of its own subtree. Nothing is allocated once
// the arena has grown to the size of the largest statement.
#pragma once

#include <tao/pegtl.hpp>
#include <tao/pegtl/contrib/parse_tree.hpp>

#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace shardscope::parser::flat {

namespace pegtl = tao::pegtl;

/// One kept node: the rule that matched (an index into the kept list), its text, and the
/// index one past its subtree (its next sibling, if any). Its first child, if any, is next.
struct Node {
    int type = -1;
    int skip = -1; ///< set when the rule matched; the root's is the arena's size
    const char* begin = nullptr;
    const char* end = nullptr;
};

/// The arena. A rule being matched keeps what it needs (its node's index, or the arena's size
/// at its start) in its own frame: see builder::control::match.
struct Tree {
    std::vector<Node> nodes; ///< nodes[0] is the root; nodes[size..] are free
    std::size_t size = 0;

    void reset(const char* begin) {
        if (nodes.empty()) // once: the array is reused by every statement
            nodes.resize(256);
        size = 0;
        push_node({-1, -1, begin, nullptr});
    }
    [[gnu::always_inline]] std::size_t push_node(const Node& n) {
        if (size == nodes.size()) [[unlikely]]
            grow(nodes);
        nodes[size] = n;
        return size++;
    }
    template <typename T>
    [[gnu::noinline]] static void grow(std::vector<T>& v) {
        v.resize(2 * v.size());
    }
    /// One past the subtree of node `i` (the root is open while the statement is read).
    int subtree_end(int i) const {
        return i == 0 ? static_cast<int>(size) : nodes[static_cast<std::size_t>(i)].skip;
    }
};

/// The kept rules; a node's type is its position here.
/// Rules that never fail after a child was attached, so need no mark: opt and star never
/// fail, plus fails only when its first round does, and sor only when every alternative
/// did; each attempt inside them is a rule of its own that cleans up after itself.
template <typename>
inline constexpr bool cleans_up_itself = false;
template <typename... R>
inline constexpr bool cleans_up_itself<pegtl::internal::opt<R...>> = true;
template <typename... R>
inline constexpr bool cleans_up_itself<pegtl::internal::sor<R...>> = true;
template <typename R, typename... Rs>
inline constexpr bool cleans_up_itself<pegtl::internal::star<R, Rs...>> = true;
template <typename R, typename... Rs>
inline constexpr bool cleans_up_itself<pegtl::internal::plus<R, Rs...>> = true;

/// Whether a sequence can fail after one of its rules attached a child: only when a rule
/// with kept rules below is followed by a rule that can fail. A sequence whose rules are
/// leaves up to the last one that can fail (`when<F, R>`, `seq<sp, one<'_'>, sp, need<R>>`,
/// the rounds of most stars: `seq<sor<..., index>, sp, opt<one<','>, sp>>`) fails either
/// before anything was attached or in a rule that cleaned up after itself: it needs no mark.
/// (One exception: not_at<R> fails when R matched, and R's children stay attached.)
template <typename>
inline constexpr bool never_fails = false;
template <typename... R>
inline constexpr bool never_fails<pegtl::internal::opt<R...>> = true;
template <typename R, typename... Rs>
inline constexpr bool never_fails<pegtl::internal::star<R, Rs...>> = true;
template <typename>
inline constexpr bool is_not_at = false;
template <typename... R>
inline constexpr bool is_not_at<pegtl::internal::not_at<R...>> = true;
template <typename R, template <typename...> class Selected>
inline constexpr bool is_leaf_rule =
    !Selected<R>::value && pegtl::parse_tree::internal::is_leaf<8, typename R::subs_t, Selected>;
/// `Attached`: a rule before these ones may have attached a child.
template <bool Attached, typename Subs, template <typename...> class Selected>
struct seq_fails_clean;
template <bool Attached, template <typename...> class Selected>
struct seq_fails_clean<Attached, pegtl::type_list<>, Selected> : std::true_type {};
template <bool Attached, typename R, typename... Rs, template <typename...> class Selected>
struct seq_fails_clean<Attached, pegtl::type_list<R, Rs...>, Selected> {
    static constexpr bool attaches = !is_leaf_rule<R, Selected>;
    /// R may fail only where nothing is attached yet.
    static constexpr bool follows_ok = !Attached || never_fails<typename R::rule_t>;
    /// R does not fail with children attached.
    static constexpr bool no_stray = !attaches || !is_not_at<typename R::rule_t>;
    using rest = seq_fails_clean<Attached || attaches, pegtl::type_list<Rs...>, Selected>;
    static constexpr bool value = follows_ok && no_stray && rest::value;
};
template <typename>
inline constexpr bool is_seq = false;
template <typename... R>
inline constexpr bool is_seq<pegtl::internal::seq<R...>> = true;

template <typename... Rules>
struct Kept {
    template <typename R>
    static constexpr int id() {
        int i = 0, found = -1;
        ((std::is_same_v<R, Rules> ? (found = i, ++i) : ++i), ...);
        return found;
    }
    template <typename R>
    struct selected : std::bool_constant<(id<R>() >= 0)> {};
};

inline Tree& tree_of(Tree& t) {
    return t;
}
template <typename T, typename... Rest>
Tree& tree_of(T&, Rest&... rest) {
    return tree_of(rest...);
}

/// The control: builds the flat tree for the rules in `KeptList`, and delegates raise (the
/// error messages) to `Base`. It replaces PEGTL's match for every rule: a kept rule appends
/// its node and remembers its index in its own frame (closing the node on success, truncating
/// the arena to it on failure), a rule that marks remembers the arena's size, and every other
/// rule is matched directly. PEGTL's start/success/failure calls would need stacks of open
/// nodes and marks for that, pushed and popped on every attempt. What else PEGTL's match does
/// is for actions (apply, and the rewind marker apply needs), and this parser has none.
template <typename KeptList, template <typename...> class Base>
struct builder {
    template <typename Rule>
    struct control : Base<Rule> {
        static constexpr int kept = KeptList::template id<Rule>();
        // A rule with no kept rule below it can never leave a child behind.
        static constexpr bool leaf =
            pegtl::parse_tree::internal::is_leaf<8, typename Rule::subs_t,
                                                 KeptList::template selected>;
        // PEGTL disables the control of its internal seq/sor/star...; a composite with kept
        // rules below must still truncate on failure, or a failed partial match (the last
        // round of a star) would leave its children attached. parse_tree forces this the same
        // way.
        static constexpr bool marks =
            !leaf && !cleans_up_itself<typename Rule::rule_t> &&
            !(is_seq<typename Rule::rule_t> &&
              seq_fails_clean<false, typename Rule::subs_t, KeptList::template selected>::value);

        template <pegtl::apply_mode A, pegtl::rewind_mode M, template <typename...> class Action,
                  template <typename...> class Control, typename Input, typename... States>
        [[nodiscard]] static bool match(Input& in, States&&... st) {
            static_assert(std::is_base_of_v<pegtl::nothing<Rule>, Action<Rule>>,
                          "the flat tree's control matches without actions");
            if constexpr (kept >= 0) {
                Tree& t = tree_of(st...);
                const std::size_t at = t.push_node({kept, -1, in.current(), nullptr});
                if (pegtl::internal::match_no_control<Rule, A, M, Action, Control>(in, st...)) {
                    Node& n = t.nodes[at]; // after the match: the arena may have grown
                    n.end = in.current();
                    n.skip = static_cast<int>(t.size);
                    return true;
                }
                t.size = at;
                return false;
            } else if constexpr (marks) {
                Tree& t = tree_of(st...);
                const std::size_t at = t.size;
                if (pegtl::internal::match_no_control<Rule, A, M, Action, Control>(in, st...))
                    return true;
                t.size = at;
                return false;
            } else {
                return pegtl::internal::match_no_control<Rule, A, M, Action, Control>(in, st...);
            }
        }
    };
};

/// A read-only view of a node, with the parts of PEGTL's parse_tree::node interface the
/// converter uses (`is_type`, `children`, `string`).
template <typename KeptList>
class View {
public:
    class Children;
    /// What iterating `children` yields: pointer-like, so `c->is_type<R>()` and `*c` work.
    class Ptr {
    public:
        Ptr(const Tree* t, int i) : view_(t, i) {}
        const View* operator->() const { return &view_; }
        /// By value: `const Node& n = *c;` must not refer into a temporary Ptr.
        View operator*() const { return view_; }

    private:
        View view_;
    };
    class Children {
    public:
        class iterator {
        public:
            iterator(const Tree* t, int i) : t_(t), i_(i) {}
            Ptr operator*() const { return {t_, i_}; }
            iterator& operator++() {
                i_ = t_->nodes[static_cast<std::size_t>(i_)].skip;
                return *this;
            }
            bool operator!=(const iterator& o) const { return i_ != o.i_; }

        private:
            const Tree* t_;
            int i_;
        };
        /// The children of the node whose subtree is (first - 1, stop).
        Children(const Tree* t, int first, int stop) : t_(t), first_(first), stop_(stop) {}
        iterator begin() const { return {t_, first_}; }
        iterator end() const { return {t_, stop_}; }
        bool empty() const { return first_ >= stop_; }
        std::size_t size() const {
            std::size_t n = 0;
            for (int i = first_; i < stop_; i = t_->nodes[static_cast<std::size_t>(i)].skip)
                ++n;
            return n;
        }
        Ptr operator[](std::size_t k) const {
            int i = first_;
            while (k-- > 0 && i < stop_)
                i = t_->nodes[static_cast<std::size_t>(i)].skip;
            return {t_, i};
        }
        /// Like std::vector::at: a missing child is a converter bug, reported as one.
        Ptr at(std::size_t k) const {
            if (k >= size()) throw std::out_of_range("parse tree: missing child");
            return (*this)[k];
        }
        Ptr front() const { return at(0); }

    private:
        const Tree* t_;
        int first_;
        int stop_;
    };

    View(const Tree* t, int i) : children(t, i + 1, t->subtree_end(i)), t_(t), i_(i) {}

    template <typename R>
    bool is_type() const {
        return node().type == KeptList::template id<R>();
    }
    const char* begin() const { return node().begin; }
    const char* end() const { return node().end; }
    std::string_view string_view() const {
        return {node().begin, static_cast<std::size_t>(node().end - node().begin)};
    }
    std::string string() const { return std::string(string_view()); }
    /// For internal errors only.
    std::string type_name() const { return "node " + std::to_string(node().type); }

    Children children;

private:
    const Node& node() const { return t_->nodes[static_cast<std::size_t>(i_)]; }
    const Tree* t_;
    int i_;
};

} // namespace shardscope::parser::flat

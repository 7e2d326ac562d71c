// A parse tree in one flat, reused arena, built by a PEGTL control class.
//
// PEGTL's parse_tree allocates a node for every attempt at a kept rule and a temporary node
// for every attempt at a composite rule with a kept rule below it (to discard children on
// backtracking); that was two thirds of the parser's time. Here a kept rule appends to an
// arena that is truncated when the rule fails, and a composite rule records where the arena
// and its parent stood (three integers) and restores them on failure. Nothing is allocated
// once the arena has grown to the size of the largest statement.
#pragma once

#include <tao/pegtl.hpp>
#include <tao/pegtl/contrib/parse_tree.hpp>

#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace shardscope::parser::flat {

namespace pegtl = tao::pegtl;

/// One kept node: the rule that matched (an index into the kept list), its text, and links.
struct Node {
    int type = -1;
    const char* begin = nullptr;
    const char* end = nullptr;
    int first_child = -1;
    int last_child = -1;
    int next = -1;
};

/// The arena, the kept nodes being matched, and the marks of composite rules being matched.
struct Tree {
    struct Mark {
        std::size_t size;
        int parent;
        int parent_last;
    };
    std::vector<Node> nodes; ///< nodes[0] is the root
    std::vector<int> open;   ///< kept nodes being matched; open.back() is the current parent
    std::vector<Mark> marks;

    void reset(const char* begin) {
        nodes.clear();
        open.clear();
        marks.clear();
        if (marks.capacity() == 0) { // once: the stacks are reused by every statement
            nodes.reserve(256);
            open.reserve(64);
            marks.reserve(256);
        }
        nodes.push_back({-1, begin, nullptr});
        open.push_back(0);
    }
    void attach(int parent, int child) {
        auto& p = nodes[static_cast<std::size_t>(parent)];
        if (p.last_child < 0)
            p.first_child = child;
        else
            nodes[static_cast<std::size_t>(p.last_child)].next = child;
        p.last_child = child;
    }
};

/// The kept rules; a node's type is its position here.
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
/// error messages) to `Base`.
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
        // rules below must still report failure, or a failed partial match (the last round of
        // a star) would leave its children attached. parse_tree forces this the same way.
        static constexpr bool enable = kept >= 0 || !leaf || Base<Rule>::enable;

        template <typename Input, typename... States>
        static void start(const Input& in, States&... st) {
            Tree& t = tree_of(st...);
            if constexpr (kept >= 0) {
                t.nodes.push_back({kept, in.current(), nullptr});
                t.open.push_back(static_cast<int>(t.nodes.size() - 1));
            } else if constexpr (!leaf) {
                const int p = t.open.back();
                t.marks.push_back(
                    {t.nodes.size(), p, t.nodes[static_cast<std::size_t>(p)].last_child});
            }
        }
        template <typename Input, typename... States>
        static void success(const Input& in, States&... st) {
            Tree& t = tree_of(st...);
            if constexpr (kept >= 0) {
                const int i = t.open.back();
                t.open.pop_back();
                t.nodes[static_cast<std::size_t>(i)].end = in.current();
                t.attach(t.open.back(), i);
            } else if constexpr (!leaf) {
                t.marks.pop_back();
            }
        }
        template <typename Input, typename... States>
        static void failure(const Input&, States&... st) {
            Tree& t = tree_of(st...);
            if constexpr (kept >= 0) {
                const int i = t.open.back();
                t.open.pop_back();
                t.nodes.resize(static_cast<std::size_t>(i));
            } else if constexpr (!leaf) {
                const auto m = t.marks.back();
                t.marks.pop_back();
                t.nodes.resize(m.size);
                auto& p = t.nodes[static_cast<std::size_t>(m.parent)];
                p.last_child = m.parent_last;
                if (m.parent_last < 0)
                    p.first_child = -1;
                else
                    t.nodes[static_cast<std::size_t>(m.parent_last)].next = -1;
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
                i_ = t_->nodes[static_cast<std::size_t>(i_)].next;
                return *this;
            }
            bool operator!=(const iterator& o) const { return i_ != o.i_; }

        private:
            const Tree* t_;
            int i_;
        };
        Children(const Tree* t, int first) : t_(t), first_(first) {}
        iterator begin() const { return {t_, first_}; }
        iterator end() const { return {t_, -1}; }
        bool empty() const { return first_ < 0; }
        std::size_t size() const {
            std::size_t n = 0;
            for (int i = first_; i >= 0; i = t_->nodes[static_cast<std::size_t>(i)].next)
                ++n;
            return n;
        }
        Ptr operator[](std::size_t k) const {
            int i = first_;
            while (k-- > 0 && i >= 0)
                i = t_->nodes[static_cast<std::size_t>(i)].next;
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
    };

    View(const Tree* t, int i)
        : children(t, t->nodes[static_cast<std::size_t>(i)].first_child), t_(t), i_(i) {}

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

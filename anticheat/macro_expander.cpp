#include "anticheat/macro_expander.h"

#include <algorithm>
#include <deque>
#include <iterator>
#include <map>

namespace kforge {

namespace {

struct Cond {
  bool skipping;
  bool inherited;  // inside a skipped group: every branch is skipped
};

// One directive's tokens after its `#`. Only #define, #undef and conditionals matter here.
void directive(const std::vector<MacroToken>& toks, int line, std::vector<Cond>& cond, PreprocessedSource& out) {
  const bool skipping = !cond.empty() && cond.back().skipping;
  if (toks.empty() || toks[0].kind != TokenKind::identifier) return;
  const std::string name = toks[0].text;
  if (name == "if" || name == "ifdef" || name == "ifndef") {
    // Only `#if 0` is known to be dead; every other group is scanned, whatever its condition.
    bool dead = name == "if" && toks.size() == 2 && toks[1].kind == TokenKind::number && toks[1].text == "0";
    cond.push_back({skipping || dead, skipping});
  } else if (name == "elif" || name == "else") {
    if (!cond.empty()) cond.back().skipping = cond.back().inherited;
  } else if (name == "endif") {
    if (!cond.empty()) cond.pop_back();
  } else if ((name == "define" || name == "undef") && !skipping && toks.size() >= 2 && toks[1].kind == TokenKind::identifier) {
    MacroDefinition d;
    d.undef = name == "undef";
    d.name = toks[1].text;
    d.line = line;
    size_t k = 2;
    if (!d.undef && k < toks.size() && toks[k].is("(") && !toks[k].space_before) {
      d.function_like = true;
      for (++k; k < toks.size() && !toks[k].is(")"); ++k) {
        if (toks[k].kind == TokenKind::identifier) {
          d.params.push_back(toks[k].text);
        } else if (toks[k].is("...")) {  // `...` is __VA_ARGS__; `args...` names it
          d.variadic = true;
          if (toks[k - 1].kind != TokenKind::identifier) d.params.push_back("__VA_ARGS__");
        }
      }
      ++k;
    }
    if (!d.undef)
      for (; k < toks.size(); ++k) d.body.push_back(toks[k]);
    MacroToken marker;
    marker.definition = static_cast<int>(out.definitions.size());
    marker.line = line;
    out.definitions.push_back(std::move(d));
    out.code.push_back(std::move(marker));
  }
}

class Expander {
 public:
  explicit Expander(const std::vector<MacroDefinition>& directives) : directives_(directives) {}

  std::vector<MacroToken> run(const std::vector<MacroToken>& code) {
    std::deque<MacroToken> in(code.begin(), code.end());
    return expand(in, 0);
  }

  bool overflowed() const { return overflow_; }
  int overflow_line() const { return overflow_line_; }

 private:
  int id_of(const std::string& name) {
    auto it = ids_.find(name);
    if (it != ids_.end()) return it->second;
    int id = static_cast<int>(ids_.size());
    ids_[name] = id;
    return id;
  }

  static bool hidden(const MacroToken& t, int id) { return std::binary_search(t.hide.begin(), t.hide.end(), id); }

  void apply(const MacroToken& t) {
    const MacroDefinition& d = directives_[t.definition];
    if (d.undef) {
      macros_.erase(d.name);
    } else {
      macros_[d.name] = &d;
    }
  }

  void overflow(int line) {
    if (!overflow_) overflow_line_ = line;
    overflow_ = true;
  }

  std::vector<MacroToken> expand(std::deque<MacroToken>& in, int depth) {
    std::vector<MacroToken> out;
    if (depth > kMaxExpansionDepth) overflow(in.empty() ? 0 : in.front().line);
    while (!in.empty()) {
      if (overflow_) {  // the source is refused; what is left is not worth copying
        in.clear();
        break;
      }
      MacroToken t = std::move(in.front());
      in.pop_front();
      if (t.definition >= 0) {
        apply(t);
        continue;
      }
      auto m = t.kind == TokenKind::identifier ? macros_.find(t.text) : macros_.end();
      if (m == macros_.end() || hidden(t, id_of(t.text))) {
        out.push_back(std::move(t));
        continue;
      }
      const MacroDefinition& mac = *m->second;
      const int id = id_of(mac.name);
      if (!mac.function_like) {
        std::vector<int> hs = t.hide;
        add_hide(hs, id);
        push_front(in, substitute(mac, {}, hs, t, depth));
        continue;
      }
      // A function-like macro's name not followed by `(` is an ordinary identifier.
      size_t k = 0;
      while (k < in.size() && in[k].definition >= 0) ++k;
      if (k >= in.size() || !in[k].is("(")) {
        out.push_back(std::move(t));
        continue;
      }
      std::vector<std::vector<MacroToken>> args;
      std::deque<MacroToken> taken;
      MacroToken rparen;
      if (!collect_args(in, args, taken, rparen)) {  // unterminated: the rest stays as it is
        out.push_back(std::move(t));
        continue;
      }
      size_t want = mac.params.size();
      if (want == 0 && args.size() == 1 && args[0].empty()) args.clear();
      if (mac.variadic && args.size() > want && want > 0) {  // the extra arguments are __VA_ARGS__
        std::vector<MacroToken>& last = args[want - 1];
        for (size_t a = want; a < args.size(); ++a) {
          MacroToken comma;
          comma.kind = TokenKind::punctuator;
          comma.text = ",";
          comma.line = rparen.line;
          last.push_back(comma);
          last.insert(last.end(), args[a].begin(), args[a].end());
        }
        args.resize(want);
      }
      if (mac.variadic && args.size() + 1 == want) args.emplace_back();
      if (args.size() != want) {  // the compiler refuses this; scan the tokens as written
        out.push_back(std::move(t));
        in.insert(in.begin(), std::make_move_iterator(taken.begin()), std::make_move_iterator(taken.end()));
        continue;
      }
      std::vector<int> hs;
      std::set_intersection(t.hide.begin(), t.hide.end(), rparen.hide.begin(), rparen.hide.end(), std::back_inserter(hs));
      add_hide(hs, id);
      push_front(in, substitute(mac, args, hs, t, depth));
    }
    return out;
  }

  static void add_hide(std::vector<int>& hs, int id) {
    auto it = std::lower_bound(hs.begin(), hs.end(), id);
    if (it == hs.end() || *it != id) hs.insert(it, id);
  }

  void push_front(std::deque<MacroToken>& in, std::vector<MacroToken> toks) {
    produced_ += toks.size();
    if (produced_ > kMaxExpandedTokens) overflow(toks.empty() ? 0 : toks.front().line);
    in.insert(in.begin(), std::make_move_iterator(toks.begin()), std::make_move_iterator(toks.end()));
  }

  // At `(` (after directives, which are applied): the arguments up to the matching `)`.
  // `taken` gets the tokens read (directives aside); on failure they are back in `in`.
  bool collect_args(std::deque<MacroToken>& in, std::vector<std::vector<MacroToken>>& args, std::deque<MacroToken>& taken,
                    MacroToken& rparen) {
    int depth = 0;
    args.emplace_back();
    while (!in.empty()) {
      if (++steps_ > kMaxArgumentSteps) {  // many unterminated calls: quadratic rescanning
        overflow(in.front().line);
        break;
      }
      MacroToken t = std::move(in.front());
      in.pop_front();
      if (t.definition >= 0) {
        apply(t);
        continue;
      }
      taken.push_back(t);
      if (t.is("(")) {
        if (depth++ == 0) continue;
      } else if (t.is(")")) {
        if (--depth == 0) {
          rparen = t;
          return true;
        }
      } else if (t.is(",") && depth == 1) {
        args.emplace_back();
        continue;
      }
      args.back().push_back(std::move(t));
    }
    in.insert(in.begin(), taken.begin(), taken.end());
    return false;
  }

  static int param_index(const MacroDefinition& m, const MacroToken& t) {
    if (!m.function_like || t.kind != TokenKind::identifier) return -1;
    for (size_t p = 0; p < m.params.size(); ++p)
      if (m.params[p] == t.text) return static_cast<int>(p);
    return -1;
  }

  // Marks a token made by the expansion of `mac` invoked at `at`.
  static void made_by(MacroToken& t, const MacroDefinition& mac, const MacroToken& at) {
    t.line = at.line;
    std::fill(t.value_lines.begin(), t.value_lines.end(), at.line);
    t.via_macro = at.via_macro.empty() ? mac.name : at.via_macro;
    t.via_line = at.via_macro.empty() ? mac.line : at.via_line;
  }

  static MacroToken stringify(const std::vector<MacroToken>& arg) {
    MacroToken t;
    t.kind = TokenKind::string;
    for (size_t k = 0; k < arg.size(); ++k) {
      if (k > 0 && arg[k].space_before) t.value.push_back(' ');
      t.value += arg[k].text;
    }
    t.text = "\"" + t.value + "\"";
    t.value_lines.assign(t.value.size(), 0);
    return t;
  }

  std::vector<MacroToken> substitute(const MacroDefinition& mac, const std::vector<std::vector<MacroToken>>& args,
                                     const std::vector<int>& hs, const MacroToken& at, int depth) {
    std::vector<MacroToken> r;
    std::map<int, std::vector<MacroToken>> expanded_args;
    const std::vector<MacroToken>& body = mac.body;
    for (size_t i = 0; i < body.size(); ++i) {
      const MacroToken& b = body[i];
      if (mac.function_like && b.is("#") && i + 1 < body.size() && param_index(mac, body[i + 1]) >= 0) {
        MacroToken s = stringify(args[param_index(mac, body[++i])]);
        made_by(s, mac, at);
        r.push_back(std::move(s));
        continue;
      }
      if (b.is("##") && !r.empty() && i + 1 < body.size()) {
        const MacroToken& nb = body[++i];
        int q = param_index(mac, nb);
        std::vector<MacroToken> rhs = q >= 0 ? args[q] : std::vector<MacroToken>{nb};
        if (q < 0) made_by(rhs[0], mac, at);
        if (rhs.empty()) continue;
        MacroToken lhs = std::move(r.back());
        r.pop_back();
        if (lhs.placemarker) {
          r.insert(r.end(), rhs.begin(), rhs.end());
          continue;
        }
        std::vector<MacroToken> pasted;
        for (CudaToken& p : lex_cuda_fragment(lhs.text + rhs[0].text)) pasted.emplace_back(std::move(p));
        for (MacroToken& p : pasted) made_by(p, mac, at);
        r.insert(r.end(), pasted.begin(), pasted.end());
        r.insert(r.end(), rhs.begin() + 1, rhs.end());
        continue;
      }
      int p = param_index(mac, b);
      if (p >= 0) {
        bool pasted_next = i + 1 < body.size() && body[i + 1].is("##");
        if (pasted_next) {
          if (args[p].empty()) {
            MacroToken pm;
            pm.placemarker = true;
            r.push_back(pm);
          } else {
            r.insert(r.end(), args[p].begin(), args[p].end());
          }
        } else {
          auto it = expanded_args.find(p);
          if (it == expanded_args.end()) {
            std::deque<MacroToken> in(args[p].begin(), args[p].end());
            it = expanded_args.emplace(p, expand(in, depth + 1)).first;
          }
          r.insert(r.end(), it->second.begin(), it->second.end());
        }
        continue;
      }
      MacroToken copy = b;
      made_by(copy, mac, at);
      r.push_back(std::move(copy));
    }
    r.erase(std::remove_if(r.begin(), r.end(), [](const MacroToken& t) { return t.placemarker; }), r.end());
    for (MacroToken& t : r)
      for (int id : hs) add_hide(t.hide, id);
    if (!r.empty()) r.front().space_before = at.space_before;
    return r;
  }

  const std::vector<MacroDefinition>& directives_;
  std::map<std::string, const MacroDefinition*> macros_;
  std::map<std::string, int> ids_;
  size_t produced_ = 0;
  size_t steps_ = 0;
  bool overflow_ = false;
  int overflow_line_ = 0;
};

}  // namespace

PreprocessedSource read_directives(LexedSource lexed) {
  PreprocessedSource out;
  std::vector<Cond> cond;
  std::vector<CudaToken>& t = lexed.tokens;
  for (size_t i = 0; i < t.size();) {
    if (t[i].directive) {  // the `#`, then the directive's tokens
      const int line = t[i].line;
      std::vector<MacroToken> toks;
      for (++i; i < t.size() && t[i].directive && !t[i].line_start; ++i)
        if (t[i].kind != TokenKind::other) toks.emplace_back(std::move(t[i]));
      directive(toks, line, cond, out);
      continue;
    }
    if (t[i].kind != TokenKind::other && (cond.empty() || !cond.back().skipping)) out.code.emplace_back(std::move(t[i]));
    ++i;
  }
  return out;
}

Expansion expand_macros(const PreprocessedSource& source) {
  Expander expander(source.definitions);
  Expansion out;
  out.tokens = expander.run(source.code);
  out.overflowed = expander.overflowed();
  out.overflow_line = expander.overflow_line();
  return out;
}

// Translation phase 6: adjacent string literals become one.
std::vector<MacroToken> concatenate_strings(std::vector<MacroToken> toks) {
  std::vector<MacroToken> out;
  for (MacroToken& t : toks) {
    if (t.kind == TokenKind::string && !out.empty() && out.back().kind == TokenKind::string) {
      MacroToken& prev = out.back();
      prev.value += t.value;
      prev.value_lines.insert(prev.value_lines.end(), t.value_lines.begin(), t.value_lines.end());
      if (prev.via_macro.empty()) {
        prev.via_macro = t.via_macro;
        prev.via_line = t.via_line;
      }
      continue;
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace kforge

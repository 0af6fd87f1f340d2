// Running an extension plan through a candidate's registry (plan_runner.h).
#include "env/extension/plan_runner.h"

#include <exception>

#include "configs/error.h"

namespace kforge {

namespace {

const kforge_ext::Function* find_function(const std::vector<kforge_ext::Function>& fns, const std::string& name) {
  for (const auto& f : fns)
    if (f.name == name) return &f;
  return nullptr;
}

std::string where(const ExtensionCall& c) { return "model_new.py:" + std::to_string(c.line) + ": " + c.fn; }

kforge_ext::Value literal_value(const nlohmann::json& v) {
  if (v.is_null()) return std::monostate{};
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number_integer()) return v.get<int64_t>();
  return v.get<double>();
}

// The init value of `name`: the task's by position, else the plan's default.
kforge_ext::Value init_value(const ExtensionPlan& plan, const PlanBindings& b, const std::string& name, const std::string& who) {
  for (size_t i = 0; i < plan.init_args.size(); ++i) {
    if (plan.init_args[i].name != name) continue;
    if (i < b.init_values.size()) return b.init_values[i];
    KFORGE_CHECK(plan.init_args[i].dflt, spec, who << ": init argument '" << name << "' has no value and no default");
    return literal_value(*plan.init_args[i].dflt);
  }
  KFORGE_FAIL(spec, who << ": '" << name << "' is not an init argument of ModelNew");
}

struct Frame {
  const ExtensionPlan& plan;
  const PlanBindings& b;
  std::map<std::string, std::vector<at::Tensor>> values;

  kforge_ext::Value resolve(const ExtensionArg& a, const std::string& who) const {
    kforge_ext::Value v;
    switch (a.kind) {
      case ExtensionArg::Kind::input: {
        size_t i = 0;
        while (i < plan.forward_args.size() && plan.forward_args[i] != a.name) ++i;
        KFORGE_CHECK(i < plan.forward_args.size() && i < b.inputs.size(), spec, who << ": '" << a.name << "' is not an input of forward");
        v = b.inputs[i];
        break;
      }
      case ExtensionArg::Kind::init_arg:
        v = init_value(plan, b, a.name, who);
        // A scalar stands for every element of a tuple-valued constructor argument (torch's _pair).
        break;
      case ExtensionArg::Kind::parameter: {
        auto it = b.parameters.find(a.name);
        KFORGE_CHECK(it != b.parameters.end(), spec, who << ": the task has no parameter '" << a.name << "'");
        v = it->second;
        break;
      }
      case ExtensionArg::Kind::literal:
        v = literal_value(a.literal);
        break;
      case ExtensionArg::Kind::value: {
        const std::vector<at::Tensor>& t = values.at(a.name);
        if (a.index) {
          KFORGE_CHECK(*a.index >= 0 && static_cast<size_t>(*a.index) < t.size(), spec,
                       who << ": '" << a.name << "' holds " << t.size() << " tensors, not an element " << *a.index);
          v = t[*a.index];
        } else {
          KFORGE_CHECK(t.size() == 1, spec, who << ": '" << a.name << "' holds " << t.size() << " tensors where one goes");
          v = t[0];
        }
        break;
      }
    }
    if (a.contiguous)
      if (auto* t = std::get_if<at::Tensor>(&v)) *t = t->contiguous();
    return v;
  }
};

}  // namespace

void check_plan(const ExtensionPlan& plan, const std::vector<kforge_ext::Function>& functions, const PlanBindings& b) {
  KFORGE_CHECK(plan.forward_args.size() == b.inputs.size(), spec,
               "model_new.py: forward takes " << plan.forward_args.size() << " inputs, the task gives " << b.inputs.size());
  for (const auto& c : plan.calls)
    KFORGE_CHECK(find_function(functions, c.fn), spec, where(c) << " is not a function the extension registered");
  for (const auto& p : plan.parameters())
    KFORGE_CHECK(b.parameters.count(p), spec,
                 "model_new.py: the task has no parameter '" << p << "' (its state_dict names are the reference's)");
  for (size_t i = b.init_values.size(); i < plan.init_args.size(); ++i)
    KFORGE_CHECK(plan.init_args[i].dflt, spec,
                 "model_new.py: init argument '" << plan.init_args[i].name << "' has no value and no default");
}

std::vector<at::Tensor> run_plan(const ExtensionPlan& plan, const std::vector<kforge_ext::Function>& functions, const PlanBindings& b) {
  check_plan(plan, functions, b);
  Frame f{plan, b, {}};
  for (const auto& c : plan.calls) {
    const kforge_ext::Function& fn = *find_function(functions, c.fn);
    std::vector<kforge_ext::Value> args;
    std::vector<std::pair<std::string, kforge_ext::Value>> kwargs;
    for (const auto& a : c.args) args.push_back(f.resolve(a, where(c)));
    for (const auto& [k, a] : c.kwargs) kwargs.emplace_back(k, f.resolve(a, where(c)));
    try {
      f.values[c.result] = fn.call(kforge_ext::bind_arguments(fn, args, kwargs));
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      KFORGE_FAIL(runtime, where(c) << ": " << e.what());
    }
  }
  std::vector<at::Tensor> out;
  for (const auto& r : plan.returns) {
    if (r.kind == ExtensionArg::Kind::value && !r.index) {
      for (auto t : f.values.at(r.name)) out.push_back(r.contiguous ? t.contiguous() : t);
      continue;
    }
    kforge_ext::Value v = f.resolve(r, "model_new.py: returns");
    out.push_back(std::get<at::Tensor>(v));
  }
  return out;
}

}  // namespace kforge

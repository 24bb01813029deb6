// Every registered method is registered completely: its registry line names step kinds the trace knows, knobs the
// param table has, and each knob has a studio control; and a run of each method runs only the kinds it declares.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <string>

#include "app/model/method_controls.h"
#include "engine/engine.h"
#include "engine/params.h"
#include "tests/support/tiny_models.h"

using namespace dyllm;

TEST_CASE("every registered method names its step kinds, param rows and studio controls", "[methods][registry]") {
    REQUIRE_FALSE(all_methods().empty());
    std::set<StepKind>    kinds_used;
    std::set<std::string> knobs_used;
    for (Method m : all_methods()) {
        INFO(method_name(m));
        CHECK(parse_method(method_name(m)) == m);
        const auto kinds = method_step_kinds(m);
        CHECK_FALSE(kinds.empty());
        for (StepKind k : kinds) {
            CHECK(k != StepKind::Count);  // a name instrumentation/step_kinds.def lacks
            CHECK(std::string(step_kind_name(k)) != "?");
            kinds_used.insert(k);
        }
        for (std::string_view key : method_knobs(m)) {
            INFO("knob " << key);
            CHECK(find_param(key) != nullptr);
            CHECK(app::find_knob_control(key) != nullptr);
            knobs_used.insert(std::string(key));
        }
    }
    // No step kind and no studio control is left that no method uses.
    for (int k = 0; k < int(StepKind::Count); ++k) {
        INFO("step kind " << step_kind_name(StepKind(k)));
        CHECK(kinds_used.count(StepKind(k)) == 1);
    }
    for (const app::KnobControl& c : app::knob_controls()) {
        INFO("studio control " << c.key);
        CHECK(knobs_used.count(std::string(c.key)) == 1);
    }
}

TEST_CASE("a run of each method runs only the step kinds its registry line declares", "[methods][registry]") {
    const Family fam    = GENERATE(Family::LLaDA, Family::Dream);
    auto         model  = Model::load(test::make_tiny_checkpoint(fam).string(), BackendKind::Cpu, 1);
    const auto   prompt = test::random_prompt(model->config(), 12, 3);
    for (Method m : all_methods()) {
        INFO(method_name(m));
        DiffusionParams p;
        p.method       = m;
        p.gen_length   = 16;
        p.steps        = 16;
        p.block_length = 4;
        p.ignore_eos   = true;
        Session s(*model);
        s.start({prompt}, p);
        s.run();
        const GenerationResult r     = s.result();
        const auto             kinds = method_step_kinds(m);
        REQUIRE(r.steps.size() == 16);
        for (const auto& rec : r.steps) CHECK(std::count(kinds.begin(), kinds.end(), rec.kind) == 1);
    }
}

// RunList: opens one RunEntry per RunBegin and finds its request by the run's label.
#include "app/model/run_list.h"

#include <iterator>

namespace dyllm::app {

std::string RunList::expect(RunRequest req) {
    const uint64_t serial = next_serial_++;
    std::string    label  = "#" + std::to_string(serial);
    if (!req.tag.empty()) label += " " + req.tag;
    requests_[label] = Pending{serial, std::move(req)};
    return label;
}

RunEntry* RunList::find(const std::string& label) {
    for (auto it = runs_.rbegin(); it != runs_.rend(); ++it)
        if ((*it)->label == label) return it->get();
    return nullptr;
}

int RunList::index_of(const std::string& label) const {
    for (size_t i = runs_.size(); i-- > 0;)
        if (runs_[i]->label == label) return int(i);
    return -1;
}

bool RunList::apply(const EventRecord& ev) {
    const auto* rb = std::get_if<RunBegin>(&ev);
    if (rb) {
        auto e   = std::make_unique<RunEntry>();
        e->label = rb->label;
        if (auto it = requests_.find(rb->label); it != requests_.end()) {
            e->serial  = it->second.serial;
            e->request = std::move(it->second.request);
            // Runs start in request order: older requests without a RunBegin were refused (bad parameters) and
            // never will have one.
            for (auto jt = requests_.begin(); jt != requests_.end();)
                jt = jt->second.serial <= e->serial ? requests_.erase(jt) : std::next(jt);
        } else {
            e->serial = 0;  // a run nobody asked for under this label (e.g. replayed from a file)
        }
        runs_.push_back(std::move(e));
        while (runs_.size() > keep_) {
            runs_.erase(runs_.begin());
            ++dropped_;
        }
    }
    if (!runs_.empty()) runs_.back()->history.apply(ev);
    return rb != nullptr;
}

std::string run_context(const RunEntry& e, size_t max_prompt_bytes) {
    std::string p;
    for (char c : e.request.prompt) p += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
    if (p.size() > max_prompt_bytes) {
        size_t cut = max_prompt_bytes;
        while (cut > 0 && (static_cast<unsigned char>(p[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
        p = p.substr(0, cut) + "...";
    }
    std::string out = e.history.has_run() ? e.history.info().model : std::string("?");
    if (!p.empty()) out += ", \"" + p + "\"";
    return out;
}

}  // namespace dyllm::app

// SPDX-License-Identifier: MIT
#include "ui/widgets/safetybanner.h"

#include "ui/base/displaytext.h"

namespace ckpt {

SafetyBanner::SafetyBanner(QWidget* parent)
    : OneLineBanner(QStringLiteral("safetyBanner"), parent)
{
    setAccessibleName(tr("Safety verdict"));
}

void SafetyBanner::setChecking()
{
    m_rating = PickleSafety::NoPickle;
    present(Tone::Neutral, tr("Checking what loading this file would run… (nothing in it is executed)"));
}

void SafetyBanner::setVerdict(const SafetyVerdict& verdict)
{
    m_rating = verdict.rating;
    switch (verdict.rating) {
    case PickleSafety::NoPickle:
        clear();
        return;
    case PickleSafety::DangerousOrUnknown: {
        // The line: the rating and the first callable. The rest expands in place.
        QString line;
        QStringList more;
        const std::size_t unsafe = verdict.unsafe.size();
        if (unsafe > 0) {
            const UnsafeCallable& first = verdict.unsafe.front();
            // In its own words: the Findings dock quotes the verdict's headline in full.
            line = tr("<b>&#9888; DANGEROUS</b>: <b>%1</b>").arg(displayHtml(first.name));
            if (unsafe > 1)
                line += tr(" and %n more", nullptr, int(unsafe - 1));
            line += tr(" would run when loaded with weights_only=False");
        } else {
            line = tr("<b>&#9888; CANNOT VERIFY</b>; treat as dangerous: %1")
                       .arg(displayHtml(
                           verdict.cannotVerify.empty() ? verdict.headline : verdict.cannotVerify.front()));
        }
        for (const UnsafeCallable& callable : verdict.unsafe) {
            if (more.size() >= 8)
                break;
            more << tr("<b>%1</b>: %2").arg(displayHtml(callable.name), displayHtml(callable.reason));
        }
        for (std::size_t i = unsafe > 0 ? 0 : 1; i < verdict.cannotVerify.size() && more.size() < 10; ++i)
            more << displayHtml(verdict.cannotVerify[i]);
        more << tr("Do not load it with <tt>weights_only=False</tt>, <tt>pickle.load</tt> or any loader that "
                   "falls back to them. Nothing in it was run here.");
        present(Tone::Danger, line, more.join(QStringLiteral("<br>")));
        return;
    }
    case PickleSafety::NeedsAllowlist: {
        const QString first
            = verdict.allowlist.empty() ? QString() : displayHtml(verdict.allowlist.front().name);
        QString line = tr("<b>Needs allowlisting</b>: torch.load(weights_only=True) refuses vetted classes");
        if (!first.isEmpty())
            line += tr(", first <b>%1</b>").arg(first);
        QString more = displayHtml(verdict.headline);
        if (!verdict.addSafeGlobals2.empty())
            more += tr("<br>It loads after: <tt>%1</tt>")
                        .arg(displayHtml(verdict.addSafeGlobals2)
                                 .replace(QLatin1Char('\n'), QStringLiteral("; ")));
        present(Tone::Caution, line, more);
        return;
    }
    case PickleSafety::KnownInert:
        present(Tone::Good,
            tr("<b>Known inert</b>: nothing in its pickles would run when it is loaded (only vetted data "
               "classes)"));
        return;
    }
}

void SafetyBanner::clear()
{
    m_rating = PickleSafety::NoPickle;
    OneLineBanner::clear();
}

} // namespace ckpt

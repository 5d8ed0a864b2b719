// SPDX-License-Identifier: MIT
// The one table of finding codes (core/base/findingcodes.inc). A code that is emitted or matched but
// missing from the table does not compile (emitters and matchers name FindingCode enumerators);
// these tests hold the table itself to what the faces rely on.
#include "core/base/finding.h"
#include "core/base/findingcodes.h"

#include <QtTest>

#include <set>
#include <string>

using namespace ckpt;

class TestFindingCodes : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void everyRowHasAnIdAndAnExplanation()
    {
        QVERIFY(findingCodes().size() > 100);
        std::set<std::string_view> ids;
        for (std::size_t i = 0; i < findingCodes().size(); ++i) {
            const FindingCodeInfo& row = findingCodes()[i];
            const QString id = QString::fromUtf8(row.id.data(), qsizetype(row.id.size()));
            // The enumerators are the table's indices: findingCodeInfo(code) reads row `code`.
            QCOMPARE(static_cast<std::size_t>(row.code), i);
            QVERIFY2(&findingCodeInfo(row.code) == &row, qPrintable(id));
            QVERIFY2(ids.insert(row.id).second, qPrintable(QStringLiteral("%1 occurs twice").arg(id)));
            // Lower-case words joined by '-': what --json has always written.
            static const QRegularExpression kebab(QStringLiteral("^[a-z0-9]+(-[a-z0-9]+)*$"));
            QVERIFY2(kebab.match(id).hasMatch(), qPrintable(id));
            QVERIFY2(
                row.explanation.size() > 20, qPrintable(QStringLiteral("%1 has no explanation").arg(id)));
            QVERIFY2(row.explanation.find('\n') == std::string_view::npos, qPrintable(id));
            QVERIFY2(findingCodeFromId(row.id) == row.code, qPrintable(id));
        }
        QVERIFY(!findingCodeFromId("no-such-code"));
        QVERIFY(!findingCodeFromId(""));
    }

    // Scripts match the ids of --json: the table keeps the strings the emitters wrote before it.
    void idsAreTheOnesJsonAlwaysHad()
    {
        QCOMPARE(findingCodeId(FindingCode::CrcMismatch), std::string_view("crc-mismatch"));
        QCOMPARE(findingCodeId(FindingCode::LoadFails), std::string_view("load-fails"));
        QCOMPARE(findingCodeId(FindingCode::UnsafePickle), std::string_view("unsafe-pickle"));
        QCOMPARE(
            findingCodeId(FindingCode::Zip64EndRecordMissing), std::string_view("zip64-end-record-missing"));
        QCOMPARE(
            findingCodeId(FindingCode::Python2StringNotUtf8), std::string_view("python2-string-not-utf8"));
        QCOMPARE(findingCodeId(FindingCode::DcpChunksDoNotTile), std::string_view("dcp-chunks-do-not-tile"));
        const Finding finding {Severity::Error, FindingCode::RecordSizeMismatch, "message"};
        QCOMPARE(finding.codeId(), std::string_view("record-size-mismatch"));
    }

    // A fix in the table is one for every finding of the code, so it comes with an explanation that
    // does not depend on the file either.
    void fixesComeWithExplanations()
    {
        int withFix = 0;
        for (const FindingCodeInfo& row : findingCodes())
            if (!row.fix.empty()) {
                ++withFix;
                QVERIFY(!row.explanation.empty());
            }
        QVERIFY(withFix > 0);
    }
};

QTEST_MAIN(TestFindingCodes)
#include "tst_findingcodes.moc"

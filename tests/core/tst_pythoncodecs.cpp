// SPDX-License-Identifier: MIT
// pythonEncode against CPython itself (3.11 and the modern torch root's): every encoding name, text
// and error handler below is encoded by Python's _codecs.encode in a child process (strings only:
// nothing is unpickled), and the verdict's encoder must give the same bytes, raise where Python
// raises, and know every name Python resolves to a codec it reproduces.
#include "core/safety/pythoncodecs.h"

#include <QProcess>
#include <QTest>

using namespace ckpt;

namespace {

// Prints one line per case: encoding name (hex), errors, text (UTF-32-LE hex), outcome, Python's
// codec name, bytes (hex).
const char* const kOracle = R"PY(
import _codecs, codecs, itertools
names = ["latin1", "Latin-1", "LATIN_1", "latin 1", "latin--1", "-latin1-", "iso-8859-1", "ISO8859-1",
         "iso_8859_1", "8859", "cp819", "l1", "latin", "latin.1", "l a t i n 1", "utf8", "UTF-8", "utf_8",
         "U8", "utf", " utf-8 ", "utf.8", "cp65001", "utf8_ucs2", "utf-8-sig", "utf_8_sig", "utf8-sig",
         "utf16", "UTF-16", "u16", "UTF-16LE", "utf-16-le", "utf_16_be", "unicodebigunmarked", "utf-32",
         "UTF_32_LE", "utf32be", "utf_32be", "ascii", "US-ASCII", "646", "ANSI_X3.4-1968", "us", "iso646-us",
         "raw_unicode_escape", "raw-unicode-escape", "unicode_escape", "cp1252", "hex", "base64", "rot13",
         "no-such-codec", "", "utf-8\x00"]
texts = ["", "abc", "a\u00e9\u00ff", "\u0100x", "\u20ac\U0001f600", "a\ud800b", "\x80\x02cos\nsystem\n"]
for name, text, errors in itertools.product(names, texts, ["strict", "ignore", "replace", "bogus"]):
    try:
        codec = codecs.lookup(name).name
    except Exception:
        codec = "-"
    try:
        out = _codecs.encode(text, name, errors)
        outcome = "bytes" if isinstance(out, bytes) else "other"
        data = out.hex() if isinstance(out, bytes) else "-"
    except LookupError as e:
        outcome, data = ("lookup" if codec == "-" else "raises"), "-"
    except Exception:
        outcome, data = "raises", "-"
    print(name.encode("utf-8").hex() or "-", errors, text.encode("utf-32-le", "surrogatepass").hex() or "-",
          outcome, codec, data or "-")
)PY";

const QStringList kReproduced = {QStringLiteral("ascii"), QStringLiteral("iso8859-1"),
    QStringLiteral("utf-8"), QStringLiteral("utf-8-sig"), QStringLiteral("utf-16"),
    QStringLiteral("utf-16-le"), QStringLiteral("utf-16-be"), QStringLiteral("utf-32"),
    QStringLiteral("utf-32-le"), QStringLiteral("utf-32-be"), QStringLiteral("raw-unicode-escape")};

std::string fromHex(const QString& hex)
{
    return hex == QLatin1String("-") ? std::string() : QByteArray::fromHex(hex.toLatin1()).toStdString();
}

} // namespace

class TestPythonCodecs : public QObject {
    Q_OBJECT

private:
    void compareWith(const QString& python);

private Q_SLOTS:
    void agreesWithPython311() { compareWith(QStringLiteral(CKPT_LEGACY_PYTHON)); }
    void agreesWithModernPython() { compareWith(QStringLiteral(CKPT_MODERN_PYTHON)); }
    void pickleTextDecodesAsTheUnpicklerDoes()
    {
        QCOMPARE(decodePickleText("a\xc3\xa9").value(), std::u32string(U"a\u00e9"));
        QCOMPARE(
            decodePickleText("\xed\xa0\x80").value(), std::u32string(1, char32_t(0xD800))); // surrogatepass
        QVERIFY(!decodePickleText("\xc0\x80")); // overlong
        QVERIFY(!decodePickleText("\xe9")); // not UTF-8: the unpickler stops
        QCOMPARE(pythonCodecModule("ISO-8859-1"), std::string("latin_1"));
        QCOMPARE(pythonCodecModule("latin.1"), std::string());
    }
};

void TestPythonCodecs::compareWith(const QString& python)
{
    if (python.isEmpty())
        QSKIP("no interpreter configured");
    QProcess oracle;
    oracle.start(python, {QStringLiteral("-c"), QString::fromUtf8(kOracle)});
    QVERIFY(oracle.waitForFinished(120000));
    QCOMPARE(oracle.exitCode(), 0);
    const QStringList lines
        = QString::fromUtf8(oracle.readAllStandardOutput()).split(u'\n', Qt::SkipEmptyParts);
    QVERIFY(lines.size() > 1000);
    QStringList mismatches;
    int reproduced = 0;
    for (const QString& line : lines) {
        const QStringList f = line.split(u' ');
        QCOMPARE(f.size(), 6);
        const std::string name = fromHex(f[0]);
        const std::string errors = f[1].toStdString();
        const std::string utf32 = fromHex(f[2]);
        std::u32string text;
        for (std::size_t i = 0; i + 3 < utf32.size(); i += 4)
            text += static_cast<char32_t>(static_cast<unsigned char>(utf32[i])
                | static_cast<unsigned char>(utf32[i + 1]) << 8
                | static_cast<unsigned char>(utf32[i + 2]) << 16
                | static_cast<unsigned char>(utf32[i + 3]) << 24);
        const PythonEncoding ours = pythonEncode(text, name, errors);
        const QString& outcome = f[3];
        const QString what = QStringLiteral("%1 (%2, errors=%3, text %4)")
                                 .arg(QString::fromStdString(name).toHtmlEscaped(), f[4], f[1], f[2]);
        switch (ours.outcome) {
        case PythonEncoding::Outcome::Bytes:
            ++reproduced;
            if (outcome != QLatin1String("bytes") || ours.bytes != fromHex(f[5]))
                mismatches << what
                        + QStringLiteral(": Python %1 %2, ours %3")
                              .arg(outcome, f[5],
                                  QString::fromLatin1(QByteArray::fromStdString(ours.bytes).toHex()));
            break;
        case PythonEncoding::Outcome::Raises:
            if (outcome != QLatin1String("raises"))
                mismatches << what
                        + QStringLiteral(": Python %1, ours raises (%2)")
                              .arg(outcome, QString::fromStdString(ours.why));
            break;
        case PythonEncoding::Outcome::Unknown:
            // Conservative, but not for a codec reproduced here under a name Python resolves.
            if (kReproduced.contains(f[4])
                && QStringList {QStringLiteral("strict"), QStringLiteral("ignore"), QStringLiteral("replace")}
                       .contains(f[1]))
                mismatches << what
                        + QStringLiteral(": Python resolves it, ours cannot tell (%1)")
                              .arg(QString::fromStdString(ours.why));
            break;
        }
    }
    qInfo("%s: %lld cases, %d encoded here", qPrintable(python), static_cast<long long>(lines.size()),
        reproduced);
    QVERIFY2(mismatches.isEmpty(), qPrintable(mismatches.mid(0, 20).join(u'\n')));
}

QTEST_GUILESS_MAIN(TestPythonCodecs)
#include "tst_pythoncodecs.moc"

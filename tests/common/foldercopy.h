// SPDX-License-Identifier: MIT
#pragma once

// A folder checkpoint copied where a test may try to write into it, and every file of a folder as
// bytes, to see that nothing in it changed: the suites that save a folder's plan through either
// face (tests/cli/tst_sharded.cpp, tests/ui/tst_shardedflow.cpp). Header-only, like the others.

#include <QByteArray>
#include <QDir>
#include <QFile>
#include <QString>
#include <QTemporaryDir>

#include <map>

namespace ckpt::testing {

// A copy of the folder `source` as `work`/`name`, hidden files too (DCP's .metadata), with a
// device_map.json of the person's own in it that an export must never write over; empty when the
// copy failed.
inline QString copyFolderWithOwnDeviceMap(
    const QString& source, const QTemporaryDir& work, const QString& name)
{
    QString folder = work.filePath(name);
    if (!QDir().mkpath(folder))
        return {};
    const QDir from(source);
    for (const QString& file : from.entryList(QDir::Files | QDir::Hidden))
        if (!QFile::copy(from.filePath(file), folder + u'/' + file))
            return {};
    QFile own(folder + QStringLiteral("/device_map.json"));
    if (!own.open(QIODevice::WriteOnly) || own.write("{\"device_map\": \"the person's own\"}\n") <= 0)
        return {};
    return folder;
}

// Every entry of `folder`, name -> bytes (a folder reads "(a folder)").
inline std::map<QString, QByteArray> folderBytes(const QString& folder)
{
    std::map<QString, QByteArray> files;
    const QDir dir(folder);
    for (const QString& name :
        dir.entryList(QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot | QDir::Hidden)) {
        QFile file(dir.filePath(name));
        files[name] = file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArrayLiteral("(a folder)");
    }
    return files;
}

} // namespace ckpt::testing

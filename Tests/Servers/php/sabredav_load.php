<?php
// Creates an address book and a calendar for a principal of a sabre/dav 1.8 SQLite database
// (schema, user and principal already there) and loads items into them through the package's
// own PDO backends (createCard / createCalendarObject keep ctag, etag and the calendar
// objects' denormalized columns as a PUT would), in one transaction. Started by dav_servers.py:
//
//   php sabredav_load.php DB.sqlite < spec.json
//
// spec.json: {"principal": "principals/ferry",
//             "addressbook": {"uri": "contacts", "displayname": "..."},
//             "calendar": {"uri": "calendar", "displayname": "...", "color": "#..", "components": ["VEVENT", "VTODO"]},
//             "cards": {"card-0.vcf": "BEGIN:VCARD...", ...}, "events": {"event-0.ics": "...", ...}}

date_default_timezone_set('UTC');
error_reporting(E_ALL & ~E_DEPRECATED);
require_once 'Sabre/autoload.php';

$spec = json_decode(file_get_contents('php://stdin'), true);
$pdo = new \PDO('sqlite:' . $argv[1]);
$pdo->setAttribute(\PDO::ATTR_ERRMODE, \PDO::ERRMODE_EXCEPTION);
$carddav = new \Sabre\CardDAV\Backend\PDO($pdo);
$caldav = new \Sabre\CalDAV\Backend\PDO($pdo);

$pdo->beginTransaction();
$book = $spec['addressbook'];
$carddav->createAddressBook($spec['principal'], $book['uri'], array('{DAV:}displayname' => $book['displayname']));
$cal = $spec['calendar'];
$caldav->createCalendar($spec['principal'], $cal['uri'], array(
    '{DAV:}displayname' => $cal['displayname'],
    '{http://apple.com/ns/ical/}calendar-color' => $cal['color'],
    '{urn:ietf:params:xml:ns:caldav}supported-calendar-component-set' =>
        new \Sabre\CalDAV\Property\SupportedCalendarComponentSet($cal['components']),
));
$bookId = null;
foreach ($carddav->getAddressBooksForUser($spec['principal']) as $row) {
    if ($row['uri'] === $book['uri']) $bookId = $row['id'];
}
$calId = null;
foreach ($caldav->getCalendarsForUser($spec['principal']) as $row) {
    if ($row['uri'] === $cal['uri']) $calId = $row['id'];
}
foreach ($spec['cards'] as $uri => $data) {
    $carddav->createCard($bookId, $uri, $data);
}
foreach ($spec['events'] as $uri => $data) {
    $caldav->createCalendarObject($calId, $uri, $data);
}
$pdo->commit();
